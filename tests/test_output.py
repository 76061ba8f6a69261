"""Output writers (src/output/pprof.c, src/output/flamegraph.c), checked by
independent readers: Google's pprof (-raw, -traces), protoc --decode with
the upstream schema from ../shared/proto, and chromium rendering the flame
graph page (the DOM after the page's script ran, not the embedded JSON).

tests/unit/test_output.c builds the profiles; the expectations below are
its inputs restated, never outputs copied from a run.
"""
import datetime
import gzip
import html.parser
import os
import re
import subprocess
import time
import urllib.parse

import pytest

from conftest import unit_program

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --- the inputs of tests/unit/test_output.c -------------------------------

APP_PATH = "/usr/bin/myapp"
APP_BUILD_ID = "4f3c2a1b9d8e7f60a1b2c3d4e5f60718293a4b5c"
KERNEL = "[kernel.kallsyms]"
CXX = "MyNS::Worker::process(std::vector<int, std::allocator<int> > const&)"
CXX_MANGLED = "_ZN4MyNS6Worker7processERKSt6vectorIiSaIiEE"
PERIOD = 10101010
TIME_NANOS = 1700000000123456789
DURATION_NANOS = 10000000000
COMMENTS = ["profd test profile", "host=testhost kernel=6.1.0"]
KERNEL_FUNCS = {"entry_SYSCALL_64", "do_syscall_64", "__x64_sys_write",
                "asm_sysvec_apic_timer_interrupt"}
UNRESOLVED_ADDR = 0x5555555A1234
UNRESOLVED = None  # the frame without a function, at UNRESOLVED_ADDR

START, MAIN, RUN, HASH, WRITE = ("__libc_start_call_main", "main", "run_loop",
                                 "compute_hash", "write")
# (stack leaf first, count, pid, tid, comm, thread_name)
SAMPLES = [
    ([HASH, CXX, RUN, MAIN, START], 7, 4242, 4243, "myapp", "worker-1"),
    (["__x64_sys_write", "do_syscall_64", "entry_SYSCALL_64", WRITE, RUN, MAIN,
      START], 3, 4242, 4242, "myapp", "myapp"),
    ([CXX, RUN, MAIN, START], 2, 4242, 4243, "myapp", "worker-1"),
    (["asm_sysvec_apic_timer_interrupt", HASH, CXX, RUN, MAIN, START], 1,
     4242, 4244, "myapp", "worker-2"),
    ([UNRESOLVED, MAIN, START], 4, 777, 777, "other", "other"),
]
RSS = (1048576, "bytes")  # numeric label with a unit, on pid 4242 only
TOTAL = sum(s[1] for s in SAMPLES)
MERGES = 2  # test_output merges the profile into the flame graph twice
# named by file offset (start 0x555555554000, offset 0x1000: tests/unit/test_output.c)
UNKNOWN_FRAME = f"[unknown] myapp+{UNRESOLVED_ADDR - 0x555555554000 + 0x1000:#x}"

HOSTILE = [
    b"evil</script><script>document.title='pwned'</script>",
    b"quote\"in<name>&amp;",
    b"bad\xff\xfeutf8\xc3(",
    b"ctl\x01\x1f\ttab\nnl",
    b"sep\xe2\x80\xa8ls\xe2\x80\xa9ps",
    b"<!--comment",
    b"snow\xe2\x98\x83man \xf0\x9f\x94\xa5",
]
HOSTILE_COMM = 'app</script>"'
HOSTILE_TITLE = b'</script><b id="injected">x</b>\xff'


def expected_labels(pid, tid, comm, thread):
    labels = {"pid": str(pid), "tid": str(tid), "comm": comm,
              "thread_name": thread}
    if pid == 4242:
        labels["rss"] = f"{RSS[0]} {RSS[1]}"
    return labels


# --- running things -------------------------------------------------------

@pytest.fixture(scope="module")
def unit_bin():
    """build/tests/unit/test_output, built by make. PROFD_TEST_OUTPUT_BIN
    may name a binary built another way (while the rest of the tree is
    being written and make cannot link the core library)."""
    return unit_program("test_output", "PROFD_TEST_OUTPUT_BIN")


@pytest.fixture(scope="module")
def outputs(unit_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("output")
    pb, page = str(d / "profile.pb.gz"), str(d / "flame.html")
    r = subprocess.run([unit_bin, pb, page], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    leftovers = [f for f in os.listdir(d) if ".tmp" in f]
    assert not leftovers, f"temporary files left: {leftovers}"
    return pb, page


def run_pprof(pprof, *args):
    r = subprocess.run([pprof, "-symbolize=none", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def dump_dom(chromium, path, tmp_path, fragment=""):
    url = "file://" + urllib.parse.quote(path)
    if fragment:
        url += "#" + fragment
    profile_dir = tmp_path / f"chromium-{time.monotonic_ns()}"
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile_dir}", "--dump-dom", url],
        capture_output=True, timeout=180)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return r.stdout.decode("utf-8")


# --- pprof -raw -----------------------------------------------------------

def parse_raw(text):
    """Samples of `pprof -raw` as sorted (stack, values, labels) tuples, with
    stack frames as function names (an address for unresolved frames)."""
    lines = text.splitlines()
    locs, samples, section = {}, [], None
    for line in lines:
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$", line)
            if m:
                samples.append([[int(x) for x in m.group(2).split()],
                                [int(v) for v in m.group(1).split()], {}])
                continue
            for key, val in re.findall(r"([\w.]+):\[([^\]]*)\]", line):
                samples[-1][2][key] = val
        elif section == "Locations":
            m = re.match(r"^\s+(\d+): 0x([0-9a-f]+) M=(\d+) ?(.*)$", line)
            assert m, f"unexpected location line {line!r}"
            fm = re.match(r"^(.*) (\S*):(-?\d+) s=\d+(?:\((.*)\))?$", m.group(4))
            locs[int(m.group(1))] = (fm.group(1) if fm else int(m.group(2), 16),
                                     int(m.group(3)), fm and fm.group(4))
    out = []
    for ids, values, labels in samples:
        out.append((tuple(locs[i][0] for i in ids), tuple(values),
                    tuple(sorted(labels.items()))))
    return sorted(out, key=repr), locs


def test_pprof_raw_samples(pprof, outputs):
    got, _ = parse_raw(run_pprof(pprof, "-raw", outputs[0]))
    want = sorted(
        ((tuple(UNRESOLVED_ADDR if f is UNRESOLVED else f for f in stack),
          (n, n * PERIOD),
          tuple(sorted(expected_labels(pid, tid, comm, th).items())))
         for stack, n, pid, tid, comm, th in SAMPLES), key=repr)
    assert got == want


def test_pprof_raw_header_and_mappings(pprof, outputs):
    text = run_pprof(pprof, "-raw", outputs[0])
    lines = text.splitlines()
    for c in COMMENTS:
        assert f"Comment: {c}" in lines
    assert "PeriodType: cpu nanoseconds" in lines
    assert f"Period: {PERIOD}" in lines
    t = datetime.datetime.fromtimestamp(TIME_NANOS // 10**9,
                                        datetime.timezone.utc)
    frac = f"{TIME_NANOS % 10**9:09d}".rstrip("0")
    assert f"Time: {t:%Y-%m-%d %H:%M:%S}{'.' + frac if frac else ''} +0000 UTC" in lines
    assert f"Duration: {DURATION_NANOS // 10**9}s" in lines
    assert "samples/count cpu/nanoseconds" in lines
    maps = lines[lines.index("Mappings") + 1:]
    app = [m for m in maps if f" {APP_PATH} " in m]
    assert len(app) == 1
    assert app[0].startswith("1: 0x555555554000/0x555555600000/0x1000 ")
    assert app[0].split()[3] == APP_BUILD_ID
    # has_functions only when every location is named: one of its
    # locations is not (the one named by file offset in the flame graph)
    assert "[FN]" not in app[0]
    kern = [m for m in maps if f" {KERNEL} " in m or m.endswith(f" {KERNEL}")]
    assert len(kern) == 1 and kern[0].startswith(
        "2: 0xffffffff81000000/0xffffffff83000000/0x0 ")


def test_pprof_raw_functions(pprof, outputs):
    _, locs = parse_raw(run_pprof(pprof, "-raw", outputs[0]))
    by_name = {name: (mapping, sysname) for name, mapping, sysname in locs.values()}
    assert by_name[CXX] == (1, CXX_MANGLED)  # demangled name + system name
    for k in KERNEL_FUNCS:
        assert by_name[k][0] == 2
    assert by_name[HASH][0] == 1


# --- pprof -traces --------------------------------------------------------

def parse_traces(text):
    blocks, cur = [], None
    for line in text.splitlines():
        if line.startswith("-----------+"):
            cur = {"labels": {}, "value": None, "stack": []}
            blocks.append(cur)
            continue
        if cur is None or not line.strip():
            continue
        m = re.match(r"^\s+(\d+)   (\S.*)$", line)
        if cur["value"] is None and m:
            cur["value"] = int(m.group(1))
            cur["stack"].append(m.group(2))
        elif cur["value"] is None:
            k, v = re.match(r"^\s*([\w.]+):\s+(.*)$", line).groups()
            cur["labels"][k] = v
        else:
            assert line.startswith(" " * 13), line
            cur["stack"].append(line.strip())
    return [b for b in blocks if b["value"] is not None]


def test_pprof_traces(pprof, outputs):
    got = parse_traces(run_pprof(pprof, "-traces", "-sample_index=samples",
                                 outputs[0]))
    assert len(got) == len(SAMPLES)
    unresolved = f"[{os.path.basename(APP_PATH)}]"  # how pprof names it
    got_set = sorted((tuple(b["stack"]), b["value"], b["labels"]["comm"],
                      b["labels"]["thread_name"], b["labels"]["pid"],
                      b["labels"]["tid"]) for b in got)
    want = sorted((tuple(unresolved if f is UNRESOLVED else f for f in stack),
                   n, comm, th, str(pid), str(tid))
                  for stack, n, pid, tid, comm, th in SAMPLES)
    assert got_set == want


def test_pprof_traces_cpu_time(pprof, outputs):
    text = run_pprof(pprof, "-traces", "-sample_index=cpu", "-unit=ns",
                     outputs[0])
    for stack, n, *_ in SAMPLES:
        if stack[0] is UNRESOLVED:
            continue
        assert re.search(rf"^\s*{n * PERIOD}ns   {re.escape(stack[0])}$", text,
                         re.M), (stack[0], text)


# --- protoc --decode ------------------------------------------------------

def unescape_text_format(s):
    """A protobuf text-format string literal body to bytes."""
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
            continue
        if n == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
            continue
        out += {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "'": b"'",
                "\\": b"\\"}[n]
        i += 2
    return bytes(out)


@pytest.fixture(scope="module")
def decoded(outputs, protoc, proto_dir):
    with gzip.open(outputs[0], "rb") as f:
        raw = f.read()
    r = subprocess.run([protoc, "-I", proto_dir,
                        "--decode=perftools.profiles.Profile",
                        "pprof/profile.proto"],
                       input=raw, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    text = r.stdout.decode()
    strings = [unescape_text_format(s).decode()
               for s in re.findall(r'^string_table: "(.*)"$', text, re.M)]
    return text, strings


def top_level(text, field):
    return [int(v) for v in re.findall(rf"^{field}: (-?\d+)$", text, re.M)]


def test_protoc_scalars(decoded):
    text, strings = decoded
    assert top_level(text, "period") == [PERIOD]
    assert top_level(text, "time_nanos") == [TIME_NANOS]
    assert top_level(text, "duration_nanos") == [DURATION_NANOS]
    assert [strings[i] for i in top_level(text, "comment")] == COMMENTS


def test_protoc_types_and_strings(decoded):
    text, strings = decoded
    assert strings[0] == ""
    assert len(strings) == len(set(strings)), "string table has duplicates"
    types = re.findall(r"^sample_type \{\n  type: (\d+)\n  unit: (\d+)\n\}",
                       text, re.M)
    assert [(strings[int(t)], strings[int(u)]) for t, u in types] == [
        ("samples", "count"), ("cpu", "nanoseconds")]
    pt = re.search(r"^period_type \{\n  type: (\d+)\n  unit: (\d+)\n\}", text,
                   re.M)
    assert (strings[int(pt.group(1))], strings[int(pt.group(2))]) == (
        "cpu", "nanoseconds")
    build_ids = [strings[int(i)] for i in
                 re.findall(r"^  build_id: (\d+)$", text, re.M)]
    assert build_ids == [APP_BUILD_ID]  # the kernel's "" is index 0, omitted
    assert len(re.findall(r"^sample \{$", text, re.M)) == len(SAMPLES)
    assert len(re.findall(r"^mapping \{$", text, re.M)) == 2


# --- the flame graph page -------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}


class Dom(html.parser.HTMLParser):
    """Elements of interest (data-name or id) with attributes and text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.frames, self.ids, self.tags, self.open = [], {}, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        a["_tag"], a["_text"] = tag, ""
        self.tags.append(a)
        if "data-name" in a:
            self.frames.append(a)
        if "id" in a:
            self.ids[a["id"]] = a
        if tag not in VOID:
            self.open.append(a)

    def handle_endtag(self, tag):
        for k in range(len(self.open) - 1, -1, -1):
            if self.open[k]["_tag"] == tag:
                del self.open[k:]
                break

    def handle_data(self, data):
        for a in self.open:
            a["_text"] += data


def parse_dom(text):
    d = Dom()
    d.feed(text)
    d.close()
    return d


def geometry(frame):
    """A laid-out frame as the page's canvas draws it (the hidden #frames
    list): (row = depth from the root, left %, width % of the zoomed
    frame, fill colour)."""
    return (int(frame["data-row"]), float(frame["data-left"]),
            float(frame["data-width"]), frame["data-fill"])


def frame_paths(frames):
    """Rebuild each drawn frame's path from its geometry: rows from the
    distinct row numbers (an icicle: the root's row on top), the parent
    is the frame one row up whose horizontal extent contains it."""
    rows = sorted({geometry(f)[0] for f in frames})
    geo = []
    for f in frames:
        row, left, width, _ = geometry(f)
        geo.append((rows.index(row), left, width, f))
    paths = {}
    for depth, left, width, f in sorted(geo, key=lambda g: g[0]):
        parent = ()
        if depth:
            cands = [(p, pl, pw) for p, (pd, pl, pw, _) in paths.items()
                     if pd == depth - 1 and pl - 1e-6 <= left and
                     left + width <= pl + pw + 1e-6]
            assert len(cands) == 1, (f["data-name"], cands)
            parent = cands[0][0]
        paths[parent + (f["data-name"],)] = (depth, left, width, f)
    return paths


def expected_tree(zoom=()):
    """Path -> weight for the merged tree (root "all" -> comm -> ...)."""
    tree = {("all",): 0}
    for stack, n, pid, tid, comm, th in SAMPLES:
        path = ("all", comm)
        tree[("all",)] += n * MERGES
        tree[path] = tree.get(path, 0) + n * MERGES
        for f in reversed(stack):
            path += (UNKNOWN_FRAME if f is UNRESOLVED else f,)
            tree[path] = tree.get(path, 0) + n * MERGES
    return tree


@pytest.fixture(scope="module")
def page_dom(outputs, chromium, tmp_path_factory):
    return parse_dom(dump_dom(chromium, outputs[1],
                              tmp_path_factory.mktemp("chromium")))


def test_flamegraph_page_is_self_contained(outputs):
    with open(outputs[1], encoding="utf-8") as f:
        page = f.read()
    d = parse_dom(page)
    for a in d.tags:
        assert "src" not in a and "href" not in a, a
        assert a["_tag"] not in ("link", "img", "iframe", "object"), a
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page  # CSP: no network even by mistake
    assert [a.get("id") for a in d.tags if a["_tag"] == "script"] == [
        "fg-data", None]


def test_flamegraph_frames_match_tree(page_dom):
    tree = expected_tree()
    paths = frame_paths(page_dom.frames)
    total = tree[("all",)]
    # Every node is wider than 0.1% here, so every node must be drawn.
    assert set(paths) == set(tree)
    for path, (depth, left, width, f) in paths.items():
        assert width == pytest.approx(100 * tree[path] / total, abs=0.01), path
        assert f["_text"] == path[-1]  # the name is visible text
        pct = f"{100 * tree[path] / total:.2f}%"
        assert pct in f["title"] and str(tree[path]) in f["title"], f["title"]


def test_flamegraph_hottest_and_kernel_frames(page_dom):
    by_name = {}
    for f in page_dom.frames:
        by_name.setdefault(f["data-name"], []).append(f)
    # Hottest leaf and hottest function by self weight, from the inputs.
    self_w = {}
    for stack, n, *_ in SAMPLES:
        if stack[0] is not UNRESOLVED:
            self_w[stack[0]] = self_w.get(stack[0], 0) + n
    hottest = max(self_w, key=self_w.get)
    assert hottest == HASH
    for name in (HASH, CXX, RUN, MAIN, "myapp", "other", UNKNOWN_FRAME):
        assert name in by_name, name
    for name, frames in by_name.items():
        kernel = name in KERNEL_FUNCS
        for f in frames:
            assert (f["data-kind"] == "kernel") == kernel, name
            assert ("k" in f["class"].split()) == kernel, name
    assert by_name["myapp"][0]["data-kind"] == "process"
    k_bg = geometry(by_name["do_syscall_64"][0])[3]
    u_bg = geometry(by_name[RUN][0])[3]
    assert k_bg != u_bg


def share(names_hit):
    """Share of all weight under frames matching names_hit, nested matches
    counted once."""
    hit = 0
    for stack, n, *_ in SAMPLES:
        if any(f in names_hit for f in stack if f is not UNRESOLVED):
            hit += n
    return f"{100 * hit / TOTAL:.2f}%"


@pytest.mark.parametrize("query,names", [
    ("hash", {HASH}),                                  # substring / regex
    ("^(main|run_loop)$", {MAIN, RUN}),                # nested: counted once
    ("process(std", {CXX}),                            # bad regex: substring
    ("SYSCALL", {"entry_SYSCALL_64"}),                 # capitals: exact case
])
def test_flamegraph_search(outputs, chromium, tmp_path, query, names):
    dom = parse_dom(dump_dom(chromium, outputs[1], tmp_path,
                             "s=" + urllib.parse.quote(query, safe="")))
    marked = {f["data-name"] for f in dom.frames if "m" in f["class"].split()}
    assert marked == names
    assert share(names) in dom.ids["match"]["_text"]


def test_flamegraph_zoom(outputs, chromium, tmp_path, page_dom):
    run = [f for f in page_dom.frames if f["data-name"] == RUN]
    assert len(run) == 1
    dom = parse_dom(dump_dom(chromium, outputs[1], tmp_path,
                             "z=" + run[0]["data-i"]))
    paths = frame_paths(dom.frames)
    zpath = ("all", "myapp", START, MAIN, RUN)
    tree = expected_tree()
    for path, (depth, left, width, f) in paths.items():
        if len(path) <= len(zpath):
            assert zpath[:len(path)] == path  # only the zoomed frame's line
            assert width == pytest.approx(100)
            assert ("a" in f["class"].split()) == (path != zpath)
        else:
            assert path[:len(zpath)] == zpath
            assert width == pytest.approx(100 * tree[path] / tree[zpath],
                                          abs=0.01)
    assert ("all", "other") not in paths
    assert zpath + (CXX, HASH) in paths


# --- hostile names --------------------------------------------------------

def test_flamegraph_hostile_names(unit_bin, chromium, tmp_path):
    page = str(tmp_path / "hostile.html")
    r = subprocess.run([unit_bin, "--hostile", page], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(page, "rb") as f:
        raw = f.read()
    raw.decode("utf-8")  # the page itself is valid UTF-8
    # Only the two real </script> end tags, no comment openers in data.
    assert raw.lower().count(b"</script") == 2
    assert b"<!--" not in raw

    dom = parse_dom(dump_dom(chromium, page, tmp_path))
    assert "injected" not in dom.ids
    assert len([a for a in dom.tags if a["_tag"] == "script"]) == 2
    assert dom.ids["title"]["_text"] == HOSTILE_TITLE.decode("utf-8", "replace")
    names = {f["data-name"] for f in dom.frames}
    for h in HOSTILE:
        want = h.decode("utf-8", "replace")
        assert want in names, (want, names)
    assert HOSTILE_COMM in names
    # The title attribute carries the name too, and the visible text.
    evil = [f for f in dom.frames if f["data-name"].startswith("evil")][0]
    assert evil["_text"] == HOSTILE[0].decode()
    assert evil["title"].startswith(HOSTILE[0].decode() + "\n")


def test_flamegraph_big_tree_is_pruned(unit_bin, chromium, tmp_path):
    page = str(tmp_path / "big.html")
    r = subprocess.run([unit_bin, "--big", "100000", page],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    t0 = time.monotonic()
    dom = parse_dom(dump_dom(chromium, page, tmp_path))
    elapsed = time.monotonic() - t0
    fg = dom.ids["fg"]
    assert int(fg["data-nodes"]) >= 100000
    drawn = int(fg["data-drawn"])
    assert drawn == len(dom.frames)
    # Frames under 0.1% of the width are not drawn: about 1000 per row
    # at most in this tree, far fewer than its 100k nodes.
    assert 100 < drawn < 5000
    for f in dom.frames:
        assert geometry(f)[2] >= 0.1 - 1e-9
    assert elapsed < 60, f"chromium took {elapsed:.1f}s"


# --- several views: CPU samples and GPU kernel time -----------------------

def test_flamegraph_views(chromium, tmp_path):
    """build/tests/unit/test_flamegraph_views checks the pages' JSON and
    writes them; here chromium runs the page's script on each view. Inputs
    of tests/unit/test_flamegraph_views.c, restated."""
    sgemm, softmax = "ampere_sgemm_128x64_nn", "softmax_kernel_f32"
    sgemm_ns, softmax_ns = 12345678, 1200000000
    gpu_total = sgemm_ns + softmax_ns
    base = ("all", "trainer", "main")
    cpu_tree = {base[:1]: 10, base[:2]: 10, base: 10,
                base + ("train_step",): 8,
                base + ("train_step", "compute_loss"): 5,
                base + ("train_step", "launch_matmul"): 3,
                base + ("train_step", "launch_matmul", "cudaLaunchKernel"): 3,
                base + ("write",): 2, base + ("write", "do_syscall_64"): 2}
    step = base + ("train_step",)
    gpu_tree = {base[:1]: gpu_total, base[:2]: gpu_total, base: gpu_total,
                step: gpu_total,
                step + ("launch_matmul",): sgemm_ns,
                step + ("launch_matmul", "cudaLaunchKernel"): sgemm_ns,
                step + ("launch_matmul", "cudaLaunchKernel", sgemm): sgemm_ns,
                step + ("launch_softmax",): softmax_ns,
                step + ("launch_softmax", "cudaLaunchKernel"): softmax_ns,
                step + ("launch_softmax", "cudaLaunchKernel", softmax):
                    softmax_ns}

    binary = unit_program("test_flamegraph_views", "PROFD_TEST_FLAMEGRAPH_VIEWS_BIN")
    r = subprocess.run([binary, str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout

    def page(name, fragment=""):
        return parse_dom(dump_dom(chromium, str(tmp_path / name), tmp_path,
                                  fragment))

    def paths_of(frames):
        """Path -> (width, frame): data-i is the preorder index, so each
        frame's parent is the last one before it a row higher."""
        paths, stack = {}, []
        for f in sorted(frames, key=lambda f: int(f["data-i"])):
            depth = geometry(f)[0]
            stack = stack[:depth] + [f["data-name"]]
            assert len(stack) == depth + 1, f["data-name"]
            paths[tuple(stack)] = (geometry(f)[2], f)
        return paths

    def check_tree(dom, tree, total, unit, view):
        fg = dom.ids["fg"]
        assert (fg["data-view"], fg["data-unit"]) == (str(view), unit)
        assert int(fg["data-total"]) == total
        paths = paths_of(dom.frames)
        assert set(paths) == set(tree)
        for path, (width, f) in paths.items():
            assert width == pytest.approx(100 * tree[path] / total, abs=0.01)
            assert f["title"].startswith(path[-1] + "\n")
        return {p[-1]: f for p, (_, f) in paths.items()}

    def tabs(dom):
        return [(dom.ids[f"tab-{k}"]["_text"],
                 dom.ids[f"tab-{k}"]["aria-selected"])
                for k in range(2) if f"tab-{k}" in dom.ids]

    def rgb(frame):
        return [int(x) for x in re.findall(r"\d+", geometry(frame)[3])]

    # The first view first: CPU, in samples, no GPU kernel frames.
    dom = page("views.html")
    assert "hidden" not in dom.ids["tabs"]
    assert tabs(dom) == [("CPU", "true"), ("GPU kernel time", "false")]
    by = check_tree(dom, cpu_tree, 10, "samples", 0)
    assert by["compute_loss"]["title"] == (
        "compute_loss\n5 samples (50.00% of all) [user]")
    assert by["do_syscall_64"]["data-kind"] == "kernel"
    assert not [f for f in dom.frames if f["data-kind"] == "cuda"]
    assert "hidden" in dom.ids["lg-cuda"]
    assert dom.ids["empty"].get("hidden") is not None

    # The GPU tab, searched: durations, kernels in their own colour.
    dom = page("views.html", "v=1&s=sgemm")
    assert tabs(dom) == [("CPU", "false"), ("GPU kernel time", "true")]
    by = check_tree(dom, gpu_tree, gpu_total, "ns", 1)
    for name, f in by.items():
        cuda = name in (sgemm, softmax)
        assert (f["data-kind"] == "cuda") == cuda, name
        assert ("g" in f["class"].split()) == cuda, name
    assert "m" in by[sgemm]["class"].split()
    assert by[sgemm]["title"] == f"{sgemm}\n12.3 ms (1.02% of all) [cuda]"
    assert by[softmax]["title"] == f"{softmax}\n1.20 s (98.98% of all) [cuda]"
    assert by["train_step"]["title"].startswith("train_step\n1.21 s (100.00%")
    assert dom.ids["match"]["_text"] == "Matched: 1.02% (12.3 ms)"
    assert int(dom.ids["match"]["data-matched"]) == sgemm_ns
    r_, g_, b_ = rgb(by[softmax])
    assert g_ > r_ and g_ > b_, "GPU kernels are green"
    assert rgb(by[softmax]) != rgb(by["launch_softmax"])
    assert "hidden" not in dom.ids["lg-cuda"]

    # Zoom in the GPU view: the zoomed frame spans the width.
    z = by["launch_softmax"]["data-i"]
    dom = page("views.html", f"v=1&z={z}")
    paths = paths_of(dom.frames)
    zpath = step + ("launch_softmax",)
    assert set(paths) == {p for p in gpu_tree if zpath[:len(p)] == p[:len(zpath)]}
    for path, (width, f) in paths.items():
        assert width == pytest.approx(100)
        assert ("a" in f["class"].split()) == (len(path) < len(zpath))
    assert "100.00% of zoomed" in paths[zpath + ("cudaLaunchKernel",)][1]["title"]

    # An empty view keeps its tab and says so: without a note of the
    # caller's, that nothing was recorded and what to run
    # (FLAMEGRAPH_EMPTY_NOTE).
    dom = page("empty.html", "v=1")
    assert tabs(dom) == [("CPU", "false"), ("GPU kernel time", "true")]
    assert dom.ids["empty"].get("hidden") is None
    assert dom.ids["empty"]["_text"] == (
        "No samples were recorded for this view. Record while the workload "
        "runs (a longer --duration), or profile one command with "
        "`profd exec -- COMMAND`.")
    # The caller's note instead, shown as text.
    dom = page("note.html", "v=1")
    assert dom.ids["empty"]["_text"] == "</script><b id=\"x\">idle & \ufffd"
    assert "x" not in dom.ids
    assert dom.frames == [] and dom.ids["fg"]["data-drawn"] == "0"

    # The node bound is per tree: the capped GPU view says what it cut.
    dom = page("capped.html", "v=1")
    assert len(dom.frames) == 3
    assert dom.ids["note"]["_text"] == "2 stacks cut at the frame bound"

    # A long run at the node bound: the lightest frames were folded into
    # their callers, the heavy stack that came last has its whole path.
    dom = page("pruned.html")
    assert dom.ids["note"]["_text"] == (
        "118 light frames folded into their callers at the frame bound")
    drawn = {f["data-name"] for f in dom.frames}
    assert {"all", "app", "main", "hot_a", "hot_b"} <= drawn

    # flamegraph_write_html: one view, no tab bar.
    dom = page("single.html")
    assert dom.ids["tabs"].get("hidden") is not None
    check_tree(dom, cpu_tree, 10, "samples", 0)
