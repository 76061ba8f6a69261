"""What a person sees when the flame graph opens: headless chromium takes
PNG screenshots of pages written by build/tests/unit/test_flamegraph_screen
(tests/unit/test_flamegraph_screen.c) at 1366x768 and 1920x1080, and the
pixels are checked: frame colours cover the first screen, the header is at
the top, the root's row is under it with the widest frames below. The
pages: a shallow profile (one web server), a whole machine (60 processes of
shallow stacks beside one 200-frame recursion) and a view without samples,
whose note must say why. One more check renders the page of a real profd
run. The PNGs are decoded here (zlib, no imaging library).
"""
import os
import struct
import subprocess
import time
import urllib.parse
import zlib

import pytest

from conftest import unit_program
from test_output import dump_dom, parse_dom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [(1366, 768), (1920, 1080)]
BACKGROUND = (250, 250, 250)  # #fafafa, the page's background
ROOT_GREY = (200, 200, 200)   # the root frame "all"
ROW = 16                      # px per frame row
TOWER_ROWS = 202              # root, "recurse", 200 frames of its stack
# tests/unit/test_flamegraph_screen.c's EMPTY_NOTE, restated.
EMPTY_NOTE = ("No CPU samples in 3 s: the processes of --pid <PID> did not "
              "run. Run a workload while profd records, or "
              "`profd exec -- COMMAND` & wait.")


# --- PNG ------------------------------------------------------------------

class Image:
    """An 8-bit RGB(A) PNG as rows of (r, g, b) tuples."""

    def __init__(self, data):
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        pos, idat = 8, b""
        while pos < len(data):
            n, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + n]
            if kind == b"IHDR":
                (self.width, self.height, depth, ctype,
                 _, _, interlace) = struct.unpack(">IIBBBBB", body)
                assert depth == 8 and ctype in (2, 6) and not interlace, \
                    (depth, ctype, interlace)
                bpp = 3 if ctype == 2 else 4
            elif kind == b"IDAT":
                idat += body
            pos += 12 + n
        raw = zlib.decompress(idat)
        stride = self.width * bpp
        prev = bytearray(stride)
        self.rows = []
        for y in range(self.height):
            off = y * (stride + 1)
            ftype, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
            unfilter(ftype, line, prev, bpp)
            self.rows.append([tuple(line[x:x + 3])
                              for x in range(0, stride, bpp)])
            prev = line

    def pixel(self, x, y):
        return self.rows[y][x]


def unfilter(ftype, line, prev, bpp):
    """Undo one scanline's PNG filter in place (RFC 2083, 6.2)."""
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if ftype == 1:
            line[i] = (line[i] + a) & 255
        elif ftype == 2:
            line[i] = (line[i] + b) & 255
        elif ftype == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif ftype == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + pred) & 255


# --- what the pixels say --------------------------------------------------

def is_frame_colour(px):
    """A frame's fill: saturated (user, kernel, GPU, process, a search
    hit) or the root's grey; not the page's greys, white or text."""
    r, g, b = px
    return max(px) - min(px) >= 24 or (abs(r - 200) <= 2 and
                                        abs(g - 200) <= 2 and abs(b - 200) <= 2)


def frame_share(img):
    """Share of the screen's pixels in frame colours."""
    n = sum(is_frame_colour(px) for row in img.rows for px in row)
    return n / (img.width * img.height)


def dark_pixels(img, y0, y1):
    """Pixels darker than text grey in rows y0..y1 (text, borders)."""
    return sum(1 for row in img.rows[y0:y1] for px in row if sum(px) < 3 * 90)


def root_row(img):
    """The top y of the root frame's row: the first pixel row at least 90%
    root grey across the page (the name "all" is a few dark pixels), or
    None."""
    for y, row in enumerate(img.rows):
        if sum(px == ROOT_GREY for px in row) >= 0.9 * (img.width - 20):
            return y
    return None


def row_cover(img, y):
    """Share of pixel row @y in frame colours."""
    return sum(is_frame_colour(px) for px in img.rows[y]) / img.width


# --- running chromium -----------------------------------------------------

@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    binary = unit_program("test_flamegraph_screen", "PROFD_TEST_FLAMEGRAPH_SCREEN_BIN")
    d = tmp_path_factory.mktemp("screen")
    r = subprocess.run([binary, str(d)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    return d


def screenshot(chromium, page, width, height, tmp_path):
    """The page as chromium shows it in a window of @width x @height."""
    png = tmp_path / f"{os.path.basename(page)}-{width}x{height}.png"
    profile_dir = tmp_path / f"chromium-{time.monotonic_ns()}"
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile_dir}", "--hide-scrollbars",
         f"--window-size={width},{height}", f"--screenshot={png}",
         "file://" + urllib.parse.quote(str(page))],
        capture_output=True, timeout=180)
    assert r.returncode == 0 and png.exists(), \
        r.stderr.decode(errors="replace")[-2000:]
    img = Image(png.read_bytes())
    assert (img.width, img.height) == (width, height)
    return img


def check_first_screen(img, min_share):
    """The header on top, the root's row under it, the widest frames below
    the root, and frames over @min_share of the screen."""
    share = frame_share(img)
    print(f"{img.width}x{img.height}: frame colours cover {share:.1%}")
    # The header: title, search box and buttons are text and borders.
    assert dark_pixels(img, 0, 48) >= 300, "no header at the top"
    root = root_row(img)
    assert root is not None, f"no root row on screen (frames {share:.1%})"
    # Under the header (48-100 px from the top), not below a tall graph.
    assert 40 <= root <= 100, f"root row at y={root}"
    assert dark_pixels(img, 0, root) >= 300, "no header above the root"
    # The first levels: the process row and its callers' rows.
    for level in (1, 2):
        y = root + level * ROW + ROW // 2
        assert row_cover(img, y) >= 0.5, f"row {level} at y={y} is empty"
    assert share >= min_share, f"frame colours cover {share:.1%}"
    return share


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_shallow_profile_fills_first_screen(pages, chromium, tmp_path, size):
    img = screenshot(chromium, pages / "shallow.html", *size, tmp_path)
    # 10 rows, mostly full width: about a sixth of 768 px, a ninth of 1080.
    check_first_screen(img, 0.08)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_deep_tower_does_not_hide_the_graph(pages, chromium, tmp_path, size):
    """A whole machine with one 200-frame recursion: the page opens on
    the root and the shallow stacks of 60 processes (the first screen is
    mostly frames), the tower runs down the page below them."""
    img = screenshot(chromium, pages / "tower.html", *size, tmp_path)
    check_first_screen(img, 0.15)
    # The tower's column reaches the bottom of the window.
    root = root_row(img)
    bottom = img.rows[img.height - ROW][:]
    assert sum(map(is_frame_colour, bottom)) >= 0.03 * img.width, \
        "the deep stack does not continue below the first screen"
    assert root < img.height // 4


def test_deep_tower_is_all_drawn(pages, chromium, tmp_path):
    """In a window as tall as the tower, every one of its rows is drawn:
    the deep stack is reachable by scrolling, and the DOM lists all of
    its frames."""
    height = 200 + TOWER_ROWS * ROW
    img = screenshot(chromium, pages / "tower.html", 1366, height, tmp_path)
    root = root_row(img)
    assert root is not None
    dom = parse_dom(dump_dom(chromium, str(pages / "tower.html"), tmp_path))
    walk = [f for f in dom.frames if f["data-name"] == "walk"]
    assert len(walk) == TOWER_ROWS - 4  # _start, main; the root, "recurse"
    assert max(int(f["data-row"]) for f in dom.frames) == TOWER_ROWS - 1
    deepest = max(walk, key=lambda f: int(f["data-row"]))
    x = int((float(deepest["data-left"]) + float(deepest["data-width"]) / 2)
            / 100 * (img.width - 20)) + 10
    y = root + int(deepest["data-row"]) * ROW + 1
    assert img.pixel(x, y) == tuple(
        int(v) for v in deepest["data-fill"][4:-1].split(",")), (x, y)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_frames_are_drawn_where_the_dom_says(pages, chromium, tmp_path, size):
    """Every frame of the shallow page wider than 8 px has its colour at
    the place the page's list of frames (#frames) gives it."""
    img = screenshot(chromium, pages / "shallow.html", *size, tmp_path)
    dom = parse_dom(dump_dom(chromium, str(pages / "shallow.html"), tmp_path))
    root = root_row(img)
    graph_w = img.width - 20  # the body's 10 px padding on either side
    checked = 0
    for f in dom.frames:
        left = float(f["data-left"]) / 100 * graph_w
        width = float(f["data-width"]) / 100 * graph_w
        if width < 8:
            continue
        x = int(10 + left + width / 2)
        y = root + int(f["data-row"]) * ROW + 1  # above the name's glyphs
        want = tuple(int(v) for v in f["data-fill"][4:-1].split(","))
        assert img.pixel(x, y) == want, (f["data-name"], x, y)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_empty_view_says_why(pages, chromium, tmp_path, size):
    page = pages / "empty.html"
    dom = parse_dom(dump_dom(chromium, str(page), tmp_path))
    assert dom.ids["empty"].get("hidden") is None
    # The caller's note, as text: "<PID>" and "&" are not markup.
    assert dom.ids["empty"]["_text"] == EMPTY_NOTE
    assert "PID" not in dom.ids and not dom.frames
    img = screenshot(chromium, page, *size, tmp_path)
    assert dark_pixels(img, 0, 48) >= 300, "no header at the top"
    assert root_row(img) is None and frame_share(img) < 0.01
    # The note is drawn under the header: text pixels, not background.
    text = sum(1 for row in img.rows[48:200] for px in row
               if px != BACKGROUND and sum(px) < 3 * 160)
    assert text >= 500, f"only {text} text pixels under the header"


def test_real_run_page_opens_on_its_root(profd_bin, chromium, tmp_path):
    """profd's own page of a 3 s whole-machine run (root needed): the
    first screen shows the header and the root's row under it, or, if
    the machine was idle, the note saying so."""
    if os.geteuid() != 0:
        pytest.skip("profd needs root")
    out = tmp_path / "out"
    busy = subprocess.Popen(["/usr/bin/python3", "-c",
                             "import time\nt = time.time() + 8\n"
                             "while time.time() < t: pass"])
    try:
        r = subprocess.run([profd_bin, "--duration", "3", "--output-dir",
                            str(out)], capture_output=True, text=True,
                           timeout=120)
    finally:
        busy.kill()
        busy.wait()
    assert r.returncode == 0, r.stderr[-2000:]
    page = out / "flamegraph.html"
    img = screenshot(chromium, page, 1366, 768, tmp_path)
    dom = parse_dom(dump_dom(chromium, str(page), tmp_path))
    if int(dom.ids["fg"]["data-total"]) == 0:
        assert dom.ids["empty"]["_text"].startswith("No CPU samples")
        return
    root = root_row(img)
    assert dark_pixels(img, 0, 48) >= 300, "no header at the top"
    assert root is not None and root <= 100, f"root row at {root}"
    assert row_cover(img, root + ROW + ROW // 2) >= 0.5


def test_language_frames_are_drawn_in_their_own_colour(profd_bin, chromium, tmp_path):
    """A Python program's page: its functions (frames of the runtime's
    [python] mapping) are "interpreted" frames, drawn in teals (green and
    blue over red) where the page's list of frames puts them, the legend
    names them, and native frames keep the warm colours."""
    if os.geteuid() != 0:
        pytest.skip("profd needs root")
    out = tmp_path / "out"
    script = ("import time\n"
              "def teal_leaf(t):\n"
              "    while time.time() < t: pass\n"
              "def teal_outer(t):\n"
              "    teal_leaf(t)\n"
              "teal_outer(time.time() + 3)\n")
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "-o", str(out), "--",
                        "/usr/bin/python3", "-c", script],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    page = out / "flamegraph.html"
    dom = parse_dom(dump_dom(chromium, str(page), tmp_path))
    assert dom.ids["lg-interp"].get("hidden") is None, "legend has no language runtime entry"
    img = screenshot(chromium, page, 1920, 1080, tmp_path)
    root = root_row(img)
    graph_w = img.width - 20
    kinds = {}
    for f in dom.frames:
        kinds.setdefault(f["data-kind"], []).append(f)
        width = float(f["data-width"]) / 100 * graph_w
        if width < 8:
            continue
        x = int(10 + float(f["data-left"]) / 100 * graph_w + width / 2)
        y = root + int(f["data-row"]) * ROW + 1
        r_, g, b = img.pixel(x, y)
        if f["data-kind"] == "interpreted":
            assert g > r_ and b > r_, (f["data-name"], (r_, g, b))
        elif f["data-kind"] == "user":
            assert r_ > b, (f["data-name"], (r_, g, b))
    names = {f["data-name"] for f in kinds.get("interpreted", [])}
    assert any("teal_leaf" in n for n in names) and \
        any("teal_outer" in n for n in names), sorted(names)[:10]
    assert kinds.get("user"), "no native frames"


INLINED_C = r"""
#include <stdint.h>
#include <stdio.h>
static inline __attribute__((always_inline)) uint64_t cream_leaf(uint64_t x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}
static inline __attribute__((always_inline)) uint64_t cream_mid(uint64_t x)
{
	return cream_leaf(x) ^ (x >> 7);
}
__attribute__((noinline)) uint64_t warm_worker(uint64_t x) { return cream_mid(x) + 1; }
int main(void)
{
	uint64_t x = 1;
	for (long i = 0; i < 2500000; i++)
		x = warm_worker(x);
	printf("%llu\n", (unsigned long long)x);
	return 0;
}
"""


def test_inlined_frames_are_drawn_in_their_own_colour(profd_bin, chromium, tmp_path):
    """A -O2 -g program whose hot code is two always_inline functions in
    warm_worker: the page draws them as frames of kind "inlined" above
    warm_worker, in creams (pale: blue well above the user frames' <= 55),
    the legend names them, and the other native frames keep the warm
    colours (blue <= 55)."""
    if os.geteuid() != 0:
        pytest.skip("profd needs root")
    src, exe, out = tmp_path / "cream.c", tmp_path / "cream", tmp_path / "out"
    src.write_text(INLINED_C)
    subprocess.run(["cc", "-O2", "-g", "-o", str(exe), str(src)], check=True)
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "--sampling-frequency", "199",
                        "-o", str(out), "--", str(exe)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    page = out / "flamegraph.html"
    dom = parse_dom(dump_dom(chromium, str(page), tmp_path))
    assert dom.ids["lg-inlined"].get("hidden") is None, "legend has no inlined"
    img = screenshot(chromium, page, 1920, 1080, tmp_path)
    root = root_row(img)
    graph_w = img.width - 20
    seen = {}
    for f in dom.frames:
        width = float(f["data-width"]) / 100 * graph_w
        if width < 8 or f["data-kind"] not in ("inlined", "user"):
            continue
        x = int(10 + float(f["data-left"]) / 100 * graph_w + width / 2)
        y = root + int(f["data-row"]) * ROW + 1
        r_, g, b = img.pixel(x, y)
        if f["data-kind"] == "inlined":
            assert b > 110 and r_ > b, (f["data-name"], (r_, g, b))
        else:
            assert r_ > 150 and b <= 60, (f["data-name"], (r_, g, b))
        seen.setdefault(f["data-kind"], set()).add(f["data-name"].split()[0])
    assert {"cream_mid", "cream_leaf"} <= seen.get("inlined", set()), seen
    assert "warm_worker" in seen.get("user", set()), seen
