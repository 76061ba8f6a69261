"""Source lines and inlined frames of native code, from DWARF (issue 18,
points 1 and 5), against binutils' addr2line as the oracle.

A C program built here with -O2 -g spins in worker(), into which two
`static inline __attribute__((always_inline))` functions are inlined
(leaf_inline inside mid_inline inside worker), called by spin(), a
function that is not inlined. profd samples it; Google's pprof reads the
profile (-raw); every location of the program's mapping must carry the
Lines `addr2line -f -i -e BIN ADDR` gives for the same address (ADDR - 1
for a return address, as profd looks it up): the inlined functions as
extra Lines, innermost first, the real function last, each with its
file:line. The same holds when the binary is stripped and its debug file
split off (objcopy --only-keep-debug, --add-gnu-debuglink; profd finds it
next to the binary), also with that debug file's sections compressed,
when only its DWARF was stripped (strip -g: the names stay, the lines
come from the debug file), and when the binary's own debug sections are
compressed (objcopy --compress-debug-sections). The oracle always reads the
original unstripped binary: the addresses are the same.

Each mapping's has_functions / has_filenames / has_line_numbers flags
must say what its locations have: true only when all of them do.
--no-symbolize-lines gives symbols alone. Corrupt .debug_info and
.debug_line never crash profd: its frames keep their symbol names, no
line is made up, and the loss is counted.

Needs root, like profd itself. About 30 s (profd's BPF load: ~3 s a run).
"""
import collections
import gzip
import json
import os
import random
import re
import shutil
import subprocess

import pytest

from pprof_traces import comments, pprof_raw_samples, pprof_traces
from test_dwarf import profile

SRC = r"""
#include <stdint.h>

volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t leaf_inline(uint64_t x)
{
	for (int i = 0; i < 4000; i++)
		x = x * 6364136223846793005ULL + (uint64_t)i;	/* LEAF_LINE */
	return x;
}

static inline __attribute__((always_inline)) uint64_t mid_inline(uint64_t x)
{
	x = leaf_inline(x ^ 3);		/* MID_CALL */
	return x + sink;
}

__attribute__((noipa)) uint64_t worker(uint64_t x)
{
	return mid_inline(x) ^ 7;	/* WORKER_CALL */
}

__attribute__((noipa)) void spin(void)
{
	for (;;)
		sink += worker(sink);	/* SPIN_CALL */
}

int main(void)
{
	spin();
	return 0;
}
"""


def src_line(marker):
    return next(i + 1 for i, l in enumerate(SRC.lstrip("\n").splitlines())
                if marker in l)


@pytest.fixture(scope="module")
def lines_build(tmp_path_factory):
    """{variant: binary path}, and "source"/"plain" (the oracle's binary)."""
    d = tmp_path_factory.mktemp("native-lines")
    src = d / "lines.c"
    src.write_text(SRC.lstrip("\n"))
    out = {"source": str(src)}
    plain = str(d / "lines")
    subprocess.run(["gcc", "-O2", "-g", "-fno-pie", "-no-pie", "-o", plain, str(src)],
                   check=True)
    out["plain"] = plain
    # the binary's own debug sections compressed (SHF_COMPRESSED, zlib)
    out["zdebug"] = str(d / "lines-z")
    subprocess.run(["objcopy", "--compress-debug-sections=zlib", plain, out["zdebug"]],
                   check=True)
    # stripped, its debug file split off and found by .gnu_debuglink; strip-g:
    # only the DWARF stripped (strip -g), the .symtab kept
    for variant, extra in (("split", []), ("split-z", ["--compress-debug-sections=zlib"]),
                           ("strip-g", [])):
        sub = d / variant
        sub.mkdir()
        dbg = sub / "lines.debug"
        exe = str(sub / "lines")
        subprocess.run(["objcopy", "--only-keep-debug", *extra, plain, str(dbg)], check=True)
        strip = "--strip-debug" if variant == "strip-g" else "--strip-all"
        subprocess.run(["objcopy", strip, plain, exe], check=True)
        subprocess.run(["objcopy", f"--add-gnu-debuglink={dbg}", exe], check=True,
                       cwd=str(sub))
        out[variant] = exe
    return out


def addr2line(binary, addrs):
    """{addr: [(function, file basename, line), ...]} innermost first, from
    `addr2line -f -i`; [] where it knows no file:line."""
    r = subprocess.run(["addr2line", "-f", "-i", "-a", "-e", binary,
                        *[hex(a) for a in addrs]],
                       check=True, capture_output=True, text=True).stdout.splitlines()
    res, cur = {}, None
    i = 0
    while i < len(r):
        if r[i].startswith("0x"):
            cur = int(r[i], 16)
            res[cur] = []
            i += 1
            continue
        fn, loc = r[i], r[i + 1]
        i += 2
        file, _, line = re.sub(r" \(discriminator \d+\)$", "", loc).rpartition(":")
        if file != "??" and line.isdigit() and int(line) > 0:
            res[cur].append((fn, os.path.basename(file), int(line)))
        elif file != "??" and line == "?" and fn != "??":
            # an inlined frame at a line-0 row (clang's compiler-made code):
            # addr2line names it without a line, as profd does (line 0)
            res[cur].append((fn, os.path.basename(file), 0))
    return res


def locations(samples, binary):
    """{(location id, exact): {"address", "lines": [(fn, file, line)...],
    "flags", "samples"}} of @binary's mapping; exact: the sample's first
    user-space location (looked up at its address, not address - 1)."""
    locs = {}
    for s in samples:
        first_user, seen = True, set()
        prev = None
        for f in s["frames"]:
            user = not f["mapping"].startswith("[kernel")
            if f["loc"] == prev:
                continue
            prev = f["loc"]
            if f["mapping"] == binary and f["loc"] not in seen:
                seen.add(f["loc"])
                lines = [(g["function"], os.path.basename(g["file"]), g["line"])
                         for g in s["frames"] if g["loc"] == f["loc"]]
                e = locs.setdefault((f["loc"], first_user),
                                    {"address": f["address"], "lines": lines,
                                     "flags": f["flags"], "samples": 0})
                e["samples"] += s["value"]
            if user:
                first_user = False
    return locs


def run_profd(profd_bin, pprof, tmp_path, binary, *args):
    work, rc, err, paths = profile(profd_bin, tmp_path, [binary], "--no-gpu", *args,
                                   only_workload=True)
    assert rc == 0, err
    assert paths, err
    samples = []
    for p in paths:
        samples += [s for s in pprof_raw_samples(pprof, p)
                    if s["labels"].get("pid") == str(work.pid)]
    assert sum(s["value"] for s in samples) >= 30, err
    return samples, paths, err


def flame_paths(outdir):
    """{(frame, kind), ...} paths root-first of flamegraph.html's first
    (CPU) view: every node's path as a tuple of (name, kind) pairs."""
    with open(os.path.join(outdir, "flamegraph.html")) as f:
        html = f.read()
    block = re.search(r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', html, re.S)
    view = json.loads(block.group(1))["views"][0]
    names, nodes = view["names"], view["nodes"]
    kinds = re.search(r"var KINDS = (\[[^\]]*\])", html).group(1)
    kinds = json.loads(kinds.replace("'", '"'))
    paths, stack, i = set(), [], 0
    while i < len(nodes):
        name, _, kind, nchildren = nodes[i:i + 4]
        i += 4
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            stack[-1][1] -= 1
        path = (stack[-1][0] if stack else ()) + ((names[name], kinds[kind]),)
        paths.add(path)
        stack.append([path, nchildren])
    return paths


def check_flags(locs):
    """Each flag pprof prints for the mapping holds for all its locations."""
    flags = {e["flags"] for e in locs.values()}
    assert len(flags) == 1, flags
    flags = flags.pop()
    every = {
        "[FN]": all(fn for e in locs.values() for fn, _, _ in e["lines"]),
        "[FL]": all(file for e in locs.values() for _, file, _ in e["lines"]),
        "[LN]": all(line > 0 for e in locs.values() for _, _, line in e["lines"]),
    }
    for flag, want in every.items():
        assert (flag in flags) == want, (flag, flags, locs)
    return flags


def check_locations(locs, oracle):
    """Each location's Lines are @oracle's at its address (address - 1 for
    a return address); returns how many were checked."""
    checked, bad = 0, []
    for (loc, exact), e in locs.items():
        want = oracle[e["address"] if exact else e["address"] - 1]
        if not want:        # no DWARF there (crt's _start): no line either
            assert all(line == 0 and not file for _, file, line in e["lines"]), e
            continue
        checked += 1
        if e["lines"] != want:
            bad.append((hex(e["address"]), exact, e["lines"], want))
    assert not bad, "profd vs oracle:\n" + "\n".join(map(str, bad))
    return checked


@pytest.mark.parametrize("variant", ["plain", "zdebug", "split", "split-z", "strip-g"])
def test_lines_and_inlined_frames(profd_bin, pprof, tmp_path, lines_build, variant):
    binary = lines_build[variant]
    samples, _, err = run_profd(profd_bin, pprof, tmp_path, binary)
    locs = locations(samples, binary)
    assert locs, f"no location in {binary}: {samples[:3]}\n{err}"
    want = addr2line(lines_build["plain"],
                     {k[1] and e["address"] or e["address"] - 1 for k, e in locs.items()})
    checked = check_locations(locs, want)
    assert checked >= 3, checked

    # the chain itself: leaf_inline <- mid_inline <- worker, then spin
    chains = collections.Counter()
    for (loc, exact), e in locs.items():
        chains[tuple(fn for fn, _, _ in e["lines"])] += e["samples"]
    total = sum(chains.values())
    inl = chains[("leaf_inline", "mid_inline", "worker")]
    assert inl >= 0.5 * sum(e["samples"] for (l, x), e in locs.items() if x), chains
    spin = [e for (l, x), e in locs.items() if e["lines"][-1][0] == "spin"]
    assert spin and all(e["lines"] == [("spin", "lines.c", src_line("SPIN_CALL"))]
                        for e in spin), spin
    leaf = [e for (l, x), e in locs.items() if e["lines"][0][0] == "leaf_inline"]
    assert all(e["lines"][1] == ("mid_inline", "lines.c", src_line("MID_CALL")) and
               e["lines"][2] == ("worker", "lines.c", src_line("WORKER_CALL"))
               for e in leaf), leaf
    check_flags(locs)
    # the flame graph: each inlined function its own frame, kind "inlined"
    want_tail = (("spin", "user"), ("worker", "user"), ("mid_inline", "inlined"),
                 ("leaf_inline", "inlined"))
    assert any(p[-4:] == want_tail for p in flame_paths(tmp_path)), \
        sorted(p[-4:] for p in flame_paths(tmp_path) if "worker" in str(p))[:5]
    print(f"{variant}: {checked} locations match addr2line -i; chains {dict(chains)} "
          f"of {total}")


def test_lines_off(profd_bin, pprof, tmp_path, lines_build):
    """--no-symbolize-lines: the symbol alone, no file, no line, one Line."""
    binary = lines_build["plain"]
    samples, _, err = run_profd(profd_bin, pprof, tmp_path, binary, "--no-symbolize-lines")
    locs = locations(samples, binary)
    assert locs, err
    for e in locs.values():
        assert len(e["lines"]) == 1 and e["lines"][0][1:] == ("", 0), e
    names = {e["lines"][0][0] for e in locs.values()}
    assert {"worker", "spin"} <= names, names
    flags = check_flags(locs)
    assert "[LN]" not in flags and "[IN]" not in flags


def corrupt_section(binary, dst, section, seed):
    """Copy @binary to @dst with @section's bytes replaced by random ones."""
    raw = dst + "." + section.strip(".")
    subprocess.run(["objcopy", f"--dump-section={section}={raw}", binary], check=True)
    size = os.path.getsize(raw)
    rnd = random.Random(seed)
    with open(raw, "r+b") as f:
        data = bytearray(f.read())
        for _ in range(max(16, size // 8)):
            data[rnd.randrange(size)] = rnd.randrange(256)
        data[0:4] = b"\xf0\xff\xff\xff"     # a unit length past the section
        f.seek(0)
        f.write(data)
    subprocess.run(["objcopy", f"--update-section={section}={raw}", binary, dst],
                   check=True)


def truncate_section(binary, dst, section, keep):
    """Copy @binary to @dst with @section cut to its first @keep bytes (its
    units' lengths still say more)."""
    raw = dst + "." + section.strip(".")
    subprocess.run(["objcopy", f"--dump-section={section}={raw}", binary], check=True)
    with open(raw, "r+b") as f:
        f.truncate(keep)
    subprocess.run(["objcopy", f"--update-section={section}={raw}", binary, dst],
                   check=True)


def counter_sum(pprof, paths, name):
    return sum(int(n) for p in paths
               for n in re.findall(rf"Comment: \w+\.{name}=(\d+)", comments(pprof, p)))


@pytest.mark.parametrize("damage", ["info+line", "line", "info-cut", "line-cut"])
def test_corrupt_dwarf(profd_bin, pprof, tmp_path, lines_build, damage):
    """Random bytes in .debug_info and .debug_line, in .debug_line alone
    (the units read, their line tables not), .debug_info cut after its
    first unit's DIE (the unit says it is longer), .debug_line cut inside
    its header: profd runs on, names the frames by their symbols, makes up
    no line, and counts the object once as partial.lines_unreadable (not
    as stat.lines_unknown, an address no line row covers)."""
    bad = str(tmp_path / "lines-bad")
    plain = lines_build["plain"]
    if damage == "info+line":
        mid = str(tmp_path / "lines-mid")
        corrupt_section(plain, mid, ".debug_info", 18)
        corrupt_section(mid, bad, ".debug_line", 5)
    elif damage == "line":
        corrupt_section(plain, bad, ".debug_line", 5)
    elif damage == "info-cut":
        truncate_section(plain, bad, ".debug_info", 100)
    else:
        truncate_section(plain, bad, ".debug_line", 60)
    # a build's counts are in the next interval's comments: several intervals
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path / "out", bad,
                                    "--profile-interval", "1")
    locs = locations(samples, bad)
    names = {fn for e in locs.values() for fn, _, _ in e["lines"]}
    assert {"worker", "spin"} <= names, (names, err)
    want = addr2line(plain,
                     {k[1] and e["address"] or e["address"] - 1 for k, e in locs.items()})
    for (loc, exact), e in locs.items():
        oracle = want[e["address"] if exact else e["address"] - 1]
        # a Line from the corrupt DWARF must still be the true one
        for got in e["lines"]:
            if got[2]:
                assert got in oracle, (got, oracle)
    # the workload's own object is the only one with bad DWARF (libc's,
    # ld.so's are sound): counted once
    assert counter_sum(pprof, paths, "lines_unreadable") == 1, \
        "".join(comments(pprof, p) for p in paths)[-3000:]


def test_pprof_names_what_profd_could_not(profd_bin, pprof, tmp_path, lines_build,
                                          monkeypatch):
    """A stripped binary whose debug file profd cannot find: its frames keep
    their addresses, and its mapping says it has no functions, so Google's
    pprof, given the binary with its symbols and DWARF afterwards
    (PPROF_BINARY_PATH, by build ID), names them itself, inlined frames
    included. (pprof does not read a debug-only file made by objcopy
    --only-keep-debug: its segments have no file data, and pprof left the
    frames unnamed with one.)"""
    exe = str(tmp_path / "lines-nodebug")
    subprocess.run(["objcopy", "--strip-all", lines_build["plain"], exe], check=True)
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path / "out", exe)
    locs = locations(samples, exe)
    assert locs and all(fn is None for e in locs.values() for fn, _, _ in e["lines"]), locs
    flags = check_flags(locs)
    assert "[FN]" not in flags
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(
        ["readelf", "-n", exe], check=True, capture_output=True, text=True).stdout).group(1)
    store = tmp_path / "binaries" / build_id
    store.mkdir(parents=True)
    shutil.copy(lines_build["plain"], store / "lines-nodebug")
    monkeypatch.setenv("PPROF_BINARY_PATH", str(tmp_path / "binaries"))
    with open("/proc/kallsyms") as f:
        kernel = {line.split()[2] for line in f}
    chains = collections.Counter()
    for p in paths:
        for s in pprof_traces(pprof, p, "-symbolize=local", inlines=True):
            if s["labels"].get("pid"):
                # pprof marks the Lines of inlined functions " (inline)"
                user = [f.removesuffix(" (inline)") for f in s["frames"]
                        if f not in kernel]
                chains[tuple(user[:5])] += s["value"]
    named = sum(v for k, v in chains.items()
                if k[:4] == ("leaf_inline", "mid_inline", "worker", "spin"))
    assert named >= 0.5 * sum(chains.values()), chains.most_common(5)


LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def libc_lines(samples):
    """Lines of libc's locations (its frames below main)."""
    return [(f["function"], f["file"], f["line"]) for s in samples for f in s["frames"]
            if f["mapping"] == LIBC]


def test_dwarf_within_the_budget(profd_bin, pprof, tmp_path, lines_build):
    """libc's DWARF (libc6-dbg's debug file, ~10 MB of sections) is read
    with the default budget, and not at all when the symbol cache may hold
    1 MiB (--symbol-cache-limit 1: an object's DWARF may take half):
    libc's frames keep their names, lose their lines, and the refusal is
    counted (partial.lines_too_big)."""
    if not any(os.scandir("/usr/lib/debug/.build-id")):
        pytest.skip("no libc6-dbg")
    binary = lines_build["plain"]
    samples, _, err = run_profd(profd_bin, pprof, tmp_path / "default", binary)
    full = libc_lines(samples)
    assert full and all(file and line for _, file, line in full), full
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path / "small", binary,
                                    "--symbol-cache-limit", "1", "--profile-interval", "1")
    small = libc_lines(samples)
    assert small and all(fn and not file and not line for fn, file, line in small), small
    assert {fn for fn, _, _ in small} <= {fn for fn, _, _ in full}
    text = "".join(comments(pprof, p) for p in paths)
    assert max(int(n) for n in re.findall(r"lines_too_big=(\d+)", text)) > 0


DEEP_LEVELS = 45	# inlined functions f0 (the loop) .. f44, all in top()


def deep_source():
    fns = ["static inline __attribute__((always_inline)) uint64_t f0(uint64_t x)\n"
           "{\n\tfor (int i = 0; i < 1000; i++)\n"
           "\t\tx = x * 6364136223846793005ULL + 1;\n\treturn x;\n}\n"]
    for i in range(1, DEEP_LEVELS):
        fns.append(f"static inline __attribute__((always_inline)) uint64_t f{i}(uint64_t x)"
                   f"\n{{\n\treturn f{i - 1}(x) + {i};\n}}\n")
    return ("#include <stdint.h>\nvolatile uint64_t sink;\n" + "".join(fns) +
            f"__attribute__((noipa)) uint64_t top(uint64_t x)\n{{\n\treturn "
            f"f{DEEP_LEVELS - 1}(x);\n}}\n"
            "int main(void)\n{\n\tfor (;;)\n\t\tsink = top(sink);\n}\n")


def test_deep_inline_chain_keeps_its_leaf(profd_bin, pprof, tmp_path):
    """45 levels of inlined functions in top(): a location keeps the 31
    innermost and top(), so the leaf (f0, the loop) and its self time stay
    true, as addr2line -i says; the levels left out are counted
    (partial.lines_inline_too_deep)."""
    src, exe = tmp_path / "deep.c", str(tmp_path / "deep")
    src.write_text(deep_source())
    subprocess.run(["gcc", "-O2", "-g", "-fno-pie", "-no-pie", "-o", exe, str(src)],
                   check=True)
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path, exe)
    locs = locations(samples, exe)
    # the hottest leaf (looked up at its own address, not a return address)
    hot = max((e for (_, exact), e in locs.items() if exact), key=lambda e: e["samples"])
    oracle = addr2line(exe, [hot["address"]])[hot["address"]]
    assert len(oracle) == DEEP_LEVELS + 1 and oracle[0][0] == "f0", oracle[:3]
    names = [fn for fn, _, _ in hot["lines"]]
    assert names[0] == "f0" and names[-1] == "top" and len(names) == 32, names
    assert hot["lines"][:31] == oracle[:31], (hot["lines"][:3], oracle[:3])
    cut = sum(int(m) for p in paths for m in
              re.findall(r"Comment: partial\.lines_inline_too_deep=(\d+)", comments(pprof, p)))
    assert cut > 0, err


GC_DEAD = r"""
#include <stdint.h>
static inline __attribute__((always_inline)) uint64_t dead_inl(uint64_t x)
{
	for (int i = 0; i < 64; i++)
		x = x * 5 + (uint64_t)i;
	return x;
}
uint64_t unused_big(uint64_t x)
{
""" + "".join(f"\tx = dead_inl(x ^ {i});\n" for i in range(300)) + r"""	return x;
}
"""

GC_MAIN = r"""
#include <stdint.h>
uint64_t nodbg_hot(uint64_t);
volatile uint64_t sink;
int main(void)
{
	uint64_t x = 1;
	for (;;)
		sink = x = nodbg_hot(x);
}
"""

GC_NODBG = r"""
#include <stdint.h>
__attribute__((noinline)) uint64_t nodbg_hot(uint64_t x)
{
	for (int i = 0; i < 3000; i++)
		x = x * 6364136223846793005ULL + 1;
	return x;
}
"""


def test_dropped_functions_dwarf_names_nothing(profd_bin, pprof, tmp_path):
    """A PIE linked with --gc-sections keeps the DWARF of a function it
    dropped, at address 0 (the linker's tombstone): [0, its size) must
    not claim live code. nodbg_hot (built without -g) gets no file, no
    line and no inlined frame, as addr2line says; dead_inl never shows."""
    objs = []
    for name, text, flags in (("dead", GC_DEAD, ["-g", "-ffunction-sections"]),
                              ("main", GC_MAIN, ["-g", "-ffunction-sections"]),
                              ("nodbg", GC_NODBG, [])):
        src = tmp_path / f"{name}.c"
        src.write_text(text)
        objs.append(str(tmp_path / f"{name}.o"))
        subprocess.run(["gcc", "-O2", "-fpie", *flags, "-c", "-o", objs[-1], str(src)],
                       check=True)
    exe = str(tmp_path / "gcb")
    subprocess.run(["gcc", "-pie", "-Wl,--gc-sections", "-o", exe, *objs], check=True)
    nm = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
    assert "unused_big" not in nm and "nodbg_hot" in nm
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path, exe)
    locs = locations(samples, exe)
    hot = [e for e in locs.values() if e["lines"][-1][0] == "nodbg_hot"]
    assert sum(e["samples"] for e in hot) >= 20, locs
    for e in locs.values():
        assert all(fn != "dead_inl" and fn != "unused_big" for fn, _, _ in e["lines"]), e
    for e in hot:
        assert e["lines"] == [("nodbg_hot", "", 0)], e


def decoded_profile(path):
    """@path (a .pb.gz profd wrote) as protoc --decode prints it, read
    without Google pprof (whose reader merges mappings of one build ID)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with gzip.open(path, "rb") as f:
        data = f.read()
    return subprocess.run(["protoc", "--decode=perftools.profiles.Profile",
                           "-I", os.path.join(root, "proto"), "profile.proto"],
                          input=data, capture_output=True, check=True).stdout.decode()


def test_copies_keep_their_own_mapping(profd_bin, pprof, tmp_path, lines_build):
    """The same binary at two paths (one build ID), run as two processes:
    the profile profd writes has a Mapping per file, each with its own
    filename and the shared build ID, and each process's locations point
    at its own file's Mapping. (Google pprof's reader merges mappings by
    build ID, size and offset: `pprof -raw` shows one of the two names.)"""
    if not shutil.which("protoc"):
        pytest.skip("no protoc")
    paths = []
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        paths.append(str(tmp_path / sub / f"lines-{sub}"))
        shutil.copy(lines_build["plain"], paths[-1])
    second = subprocess.Popen([paths[1]])
    try:
        work, rc, err, outs = profile(profd_bin, tmp_path / "out", [paths[0]], "--no-gpu",
                                      "--pid", str(second.pid), only_workload=True)
    finally:
        second.kill()
        second.wait()
    assert rc == 0 and outs, err
    text = decoded_profile(outs[-1])
    strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
    maps = {}
    for m in re.finditer(r"^mapping \{\n(.*?)^\}", text, re.M | re.S):
        f = dict(re.findall(r"^  (\w+): (\S+)$", m.group(1), re.M))
        maps[int(f["id"])] = (strings[int(f.get("filename", 0))],
                              strings[int(f.get("build_id", 0))])
    ours = {mid: v for mid, v in maps.items() if v[0] in paths}
    assert {v[0] for v in ours.values()} == set(paths), maps
    assert len({v[1] for v in ours.values()}) == 1 and list(ours.values())[0][1], ours
    # each sample's user locations of the binary: its own process's file
    locs = {}
    for m in re.finditer(r"^location \{\n(.*?)^\}", text, re.M | re.S):
        f = dict(re.findall(r"^  (\w+): (\S+)$", m.group(1), re.M))
        locs[int(f["id"])] = int(f.get("mapping_id", 0))
    pid_of = {str(work.pid): paths[0], str(second.pid): paths[1]}
    seen = set()
    for m in re.finditer(r"^sample \{\n(.*?)^\}", text, re.M | re.S):
        ids = [int(x) for x in re.findall(r"^  location_id: (\d+)$", m.group(1), re.M)]
        labels = re.findall(r"label \{\n    key: (\d+)\n    (?:str|num): (\S+)", m.group(1))
        pid = next((v for k, v in labels if strings[int(k)] == "pid"), None)
        if pid not in pid_of:
            continue
        files = {maps[locs[i]][0] for i in ids if locs.get(i) in ours}
        assert files == {pid_of[pid]}, (pid, files)
        seen.add(pid)
    assert seen == set(pid_of), (seen, err)


HOT_H = r"""
static inline __attribute__((always_inline)) unsigned long hot(unsigned long x)
{
	for (int i = 0; i < 4000; i++)
		x = x * 6364136223846793005UL + (unsigned long)i;	/* HOT_LINE */
	return x;
}
"""

REL_MAIN = r"""
#include "hot.h"
volatile unsigned long sink;
__attribute__((noipa)) void spin(void)
{
	for (;;)
		sink += hot(sink);
}
int main(void)
{
	spin();
	return 0;
}
"""


@pytest.mark.parametrize("dwarf,comp", [("-gdwarf-4", None), ("-gdwarf-5", None),
                                        ("-gdwarf-5", "rel/dir"), ("-gdwarf-4", ".")])
def test_relative_include_directory_is_under_comp_dir(profd_bin, pprof, tmp_path, dwarf,
                                                      comp):
    """A build with relative paths (`gcc -Iinc src/main.c`, as make runs
    it) records "inc" and "src" as directories relative to DW_AT_comp_dir
    (DWARF 5 6.2.4). Each location's file is the whole path addr2line
    gives (comp_dir/inc/hot.h), not "inc/hot.h" (libdw's join, which
    `pprof -list` cannot find without -source_path); with a relative
    DW_AT_comp_dir (-fdebug-prefix-map=$PWD=@comp) under that one."""
    build = tmp_path / "build"
    (build / "inc").mkdir(parents=True)
    (build / "src").mkdir()
    (build / "inc" / "hot.h").write_text(HOT_H.lstrip("\n"))
    (build / "src" / "main.c").write_text(REL_MAIN.lstrip("\n"))
    remap = [f"-fdebug-prefix-map={build}={comp}"] if comp else []
    subprocess.run(["gcc", "-O2", dwarf, *remap, "-fno-pie", "-no-pie", "-Iinc", "-o", "rel",
                    "src/main.c"], check=True, cwd=build)
    binary = str(build / "rel")
    out = tmp_path / "out"
    out.mkdir()
    samples, _, err = run_profd(profd_bin, pprof, out, binary)
    files = collections.Counter()
    addrs = set()
    for s in samples:
        for f in s["frames"]:
            if f["mapping"] == binary and f["file"]:
                files[f["file"]] += s["value"]
                addrs.add(f["address"])
    hot_h = f"{comp}/inc/hot.h" if comp else str(build / "inc" / "hot.h")
    assert files[hot_h] > 0, (files, err)
    assert comp or all(os.path.isabs(f) for f in files), files
    # the oracle: addr2line's whole file names at the same addresses
    r = subprocess.run(["addr2line", "-i", "-e", binary, *[hex(a) for a in addrs],
                        *[hex(a - 1) for a in addrs]],
                       check=True, capture_output=True, text=True).stdout
    oracle = {re.sub(r":\d+( \(discriminator \d+\))?$", "", l) for l in r.splitlines()}
    assert set(files) <= oracle, (files, oracle)
