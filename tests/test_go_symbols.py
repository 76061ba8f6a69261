"""Go's own names, files, lines and inlined frames from the pclntab
(src/symbol/go_symtab.c over src/util/gopclntab.c), for a Go binary
built plain and with -ldflags='-s -w' (no symbol table, no DWARF).

The workload (tests/workloads/go_symbols) spins in main.main -> main.work
-> main.spin (noinline) -> main.mix -> main.rotate, the last two inlined
into spin (checked with -gcflags=-m). The oracle is Go itself: the
program prints what runtime.Callers + runtime.CallersFrames give from
spin, and from a fault inside spin's inlined copy of mix (Go's traceback
of a pc in inlined code: the inlined frames with their own lines), with
the raw pcs. Google's pprof reads profd's profiles. Every frame's
function, file and line is checked against Go's where the profile's one
line per location can carry it (the real function and its line at the
call; the inlined frames are checked through test_go_symbols, the CLI
over the same lookup); every function entry against `nm` of the plain
binary. Needs /usr/bin/go; the profd test needs root and BPF (~20 s).
"""
import errno
import os
import random
import re
import shutil
import struct
import subprocess

import pytest

from conftest import ROOT, run_unit
from pprof_traces import pprof_raw_samples
from test_dwarf import counters, profile
from test_go_unwind import strip_section_headers

SRC = os.path.join(ROOT, "tests", "workloads", "go_symbols")
GO = shutil.which("go", path="/usr/bin:/usr/local/go/bin:" + os.environ.get("PATH", ""))
CHAIN = ["main.spin", "main.work", "main.main", "runtime.main", "runtime.goexit"]
NAMED_SHARE = 0.95      # of the workload binary's frames, named by profd
SRC_FILES = ["src/symbol/elf_file.c", "src/symbol/elf_symtab.c", "src/symbol/go_symtab.c",
             "src/symbol/plt.c", "src/util/gopclntab.c", "src/util/go_elf.c",
             "src/util/elf_section.c",
             "src/counters/counters.c"]

pytestmark = pytest.mark.skipif(GO is None, reason="no Go toolchain (golang-go)")


# the builds, and the unstripped one whose nm gives each one's addresses
NM_OF = {"plain": "plain", "stripped": "plain", "noshdr": "plain",
         "pie": "pie-plain", "pie-plain": "pie-plain", "pie-noshdr": "pie-plain"}


@pytest.fixture(scope="module")
def go_build(tmp_path_factory):
    """{variant: path}: the workload built plain, with -s -w, as a PIE
    (with and without -s -w), and the -s -w builds (PIE or not) with
    their section headers removed (found by its magic, then); the
    compiler must say it inlined mix and rotate into spin."""
    out = tmp_path_factory.mktemp("go-symbols")
    env = dict(os.environ, GOCACHE=str(out / "cache"), GOFLAGS="-mod=mod",
               CGO_ENABLED="0", GOTOOLCHAIN="local")
    paths = {}
    for variant, flags in (("plain", ["-gcflags=-m"]), ("stripped", ["-ldflags=-s -w"]),
                           ("pie-plain", ["-buildmode=pie"]),
                           ("pie", ["-buildmode=pie", "-ldflags=-s -w"])):
        dst = str(out / f"gosymbols-{variant}")
        p = subprocess.run([GO, "build", *flags, "-o", dst, "."], cwd=SRC, env=env,
                           check=True, capture_output=True, text=True)
        if variant == "plain":
            assert re.search(r"main.go:\d+:\d+: inlining call to mix", p.stderr), p.stderr
            assert re.search(r"main.go:\d+:\d+: inlining call to rotate", p.stderr), p.stderr
            assert "can inline spin" not in p.stderr, p.stderr
        paths[variant] = dst
    paths["noshdr"] = strip_section_headers(paths["stripped"], str(out / "gosymbols-noshdr"))
    paths["pie-noshdr"] = strip_section_headers(paths["pie"],
                                                str(out / "gosymbols-pie-noshdr"))
    return paths


def nm_funcs(binary, sized=False):
    """{address: Go name} of the text symbols of @binary (nm; with
    @sized, only those with a size)."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt" and (not sized or int(parts[1], 16) > 0):
            name = parts[3][:-len(".abi0")] if parts[3].endswith(".abi0") else parts[3]
            syms[int(parts[0], 16)] = name
    return syms


def parse_frame(text):
    m = re.match(r"^(.*)@(.*):(\d+)$", text)
    assert m, text
    return m.group(1), m.group(2), int(m.group(3))


def go_oracle(binary):
    """{tag: (frames, pcs)} as the workload prints them before "ready":
    frames [(function, file, line)] innermost first, pcs as
    runtime.Callers stores them, and "entry": main.work's address."""
    proc = subprocess.Popen([binary], stdout=subprocess.PIPE, text=True)
    got = {}
    try:
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            if line.startswith("entry "):
                got["entry"] = int(line.split()[1], 16)
                continue
            tag, frames, pcs = line.split()
            got.setdefault(tag, ([parse_frame(f) for f in frames.split(";")],
                                 [int(p, 16) for p in pcs.split(";")]))
    finally:
        proc.kill()
        proc.wait()
    assert sorted(got) == ["chain", "entry", "fault"], got
    return got


def load_bias(go_build, variant, oracle):
    """Run-time address - ELF address of @variant's code (0 but for a PIE)."""
    work = [a for a, n in nm_funcs(go_build[NM_OF[variant]]).items() if n == "main.work"]
    assert len(work) == 1, work
    return oracle["entry"] - work[0]


def cli(build_dir, binary, pcs):
    """test_go_symbols's frames at each pc: {pc: [(function, file, line)]}
    or {pc: -errno}."""
    exe = os.path.join(build_dir, "tests", "unit", "test_go_symbols")
    p = subprocess.run([exe, binary, "-"], input="".join(f"{pc:x}\n" for pc in pcs),
                       capture_output=True, text=True, check=True, timeout=300)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) == 2:
            out[int(f[0], 16)] = int(f[1])
        else:
            out.setdefault(int(f[0], 16), []).append((f[2], f[3], int(f[4])))
    return out


@pytest.mark.parametrize("variant", ["plain", "stripped", "noshdr", "pie", "pie-noshdr"])
def test_frames_match_go(build_dir, go_build, variant):
    """For every pc Go's runtime.Callers gave (spin's chain; the fault in
    spin's inlined mix, through the panic machinery, where Go's own
    sigpanic has panicmem inlined): the lookup at the pc a byte back
    gives exactly Go's frames there, inlined ones included, names, files
    and lines."""
    oracle = go_oracle(go_build[variant])
    bias = load_bias(go_build, variant, oracle)
    fault_frames = [f[0] for f in oracle["fault"][0]]
    assert fault_frames[fault_frames.index("runtime.sigpanic") + 1:][:2] == \
        ["main.mix", "main.spin"], fault_frames
    for tag in ("chain", "fault"):
        frames, pcs = oracle[tag]
        assert len(frames) == len(pcs), (tag, frames, pcs)
        got = cli(build_dir, go_build[variant], [pc - 1 - bias for pc in pcs])
        k = 0
        while k < len(pcs):
            ours = got[pcs[k] - 1 - bias]
            assert isinstance(ours, list), (variant, tag, hex(pcs[k]), ours)
            assert ours == frames[k:k + len(ours)], (variant, tag, hex(pcs[k]), ours,
                                                     frames[k:])
            k += len(ours)
    inl = got[oracle["fault"][1][fault_frames.index("main.mix")] - 1 - bias]
    assert [f[0] for f in inl] == ["main.mix", "main.spin"], inl


@pytest.mark.parametrize("variant", ["stripped", "noshdr", "pie", "pie-noshdr"])
def test_entries_match_nm(build_dir, go_build, variant):
    """Every sized function symbol of the unstripped build (nm -S) is, at
    its address, the function @variant's pclntab names there (as Go's
    runtime prints it: the linker writes the pclntab's names of
    generated functions with "[...]" for array lengths,
    type..eq.[...]runtime.Frame for the symbol type..eq.[2]runtime.Frame)."""
    syms = nm_funcs(go_build[NM_OF[variant]], sized=True)
    assert len(syms) > 1000, len(syms)
    got = cli(build_dir, go_build[variant], sorted(syms))
    bad = {hex(a): (n, got.get(a)) for a, n in syms.items()
           if not isinstance(got.get(a), list) or
           got[a][-1][0] not in (n, re.sub(r"\[\d+\]", "[...]", n))}
    assert not bad, (len(bad), list(bad.items())[:10])


CGO_PROG = """package main

/*
static int add(int a, int b) { return a + b; }
*/
import "C"

import "fmt"

func main() { fmt.Println(C.add(1, 2)) }
"""


def test_cgo_pie_entries(build_dir, tmp_path):
    """A cgo PIE linked -s -w by the host linker, which merges the
    pclntab into .data.rel.ro (no section of its own: found by its magic
    there, its text start from its relocation): every sized Go function
    symbol of the unstripped build is, at its address, the function the
    pclntab names; the C functions are outside it (-ENOENT)."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc for cgo")
    (tmp_path / "main.go").write_text(CGO_PROG)
    (tmp_path / "go.mod").write_text("module cgopie\n\ngo 1.19\n")
    env = dict(os.environ, GOCACHE=str(tmp_path / "cache"), CGO_ENABLED="1",
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    for name, flags in (("plain", []), ("stripped", ["-ldflags=-s -w"])):
        subprocess.run([GO, "build", "-buildmode=pie", *flags, "-o", name, "."],
                       cwd=tmp_path, env=env, check=True)
    from test_unwind_table import readelf_sections
    assert not any(k.endswith("gopclntab") for k in readelf_sections(str(tmp_path / "stripped")))
    syms = nm_funcs(str(tmp_path / "plain"), sized=True)
    got = cli(build_dir, str(tmp_path / "stripped"), sorted(syms))
    named = {a: g[-1][0] for a, g in got.items() if isinstance(g, list)}
    bad = {hex(a): (syms[a], n) for a, n in named.items()
           if n not in (syms[a], re.sub(r"\[\d+\]", "[...]", syms[a]))}
    assert not bad, (len(bad), list(bad.items())[:10])
    assert len(named) > 1000 and "main.main" in named.values(), len(named)
    unnamed = [syms[a] for a, g in got.items() if not isinstance(g, list)]
    assert all(g == -errno.ENOENT for g in got.values() if not isinstance(g, list))
    assert all("." not in n or n.startswith(("_cgo", "x_cgo")) for n in unnamed), unnamed[:10]


def test_gopclntab_unit(tmp_path):
    """build/tests/unit/test_gopclntab: the decoder on a table written by
    hand from Go 1.18's layout (values from the spec), every truncation
    and bit flip of it; again built with ASan/UBSan."""
    run_unit("test_gopclntab", timeout=60)
    exe = str(tmp_path / "test_gopclntab_asan")
    subprocess.run(["gcc", "-O1", "-g", "-std=gnu11", "-D_GNU_SOURCE",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-I" + os.path.join(ROOT, "src"), "-I" + ROOT,
                    "-I" + os.path.join(ROOT, "tests", "unit"), "-o", exe,
                    os.path.join(ROOT, "tests/unit/test_gopclntab.c"),
                    os.path.join(ROOT, "src/util/gopclntab.c")], check=True)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


GOSYM = os.path.join(ROOT, "tests", "workloads", "go_gosym")
# a stripped Go binary built elsewhere (Debian's), when installed
DEBIAN_GO = "/usr/lib/go-1.19/pkg/tool/linux_amd64/compile"


@pytest.mark.parametrize("variant", ["stripped", "pie", "debian-compile"])
def test_gosym_agrees(build_dir, go_build, tmp_path, variant):
    """Go's own pclntab reader, debug/gosym (tests/workloads/go_gosym),
    against ours, at every function's entry and 7 pcs inside it, in the
    workload and in Debian's stripped Go compiler (16 MB, ~8000
    functions): the real function holding the pc is gosym's, the file
    and line of the pc itself (the innermost frame's) are gosym's."""
    binary = DEBIAN_GO if variant == "debian-compile" else go_build[variant]
    if not os.path.exists(binary):
        pytest.skip(f"{binary}: not installed")
    env = dict(os.environ, GOCACHE=str(tmp_path / "cache"), GOFLAGS="-mod=mod",
               CGO_ENABLED="0", GOTOOLCHAIN="local")
    tool = str(tmp_path / "gosym")
    subprocess.run([GO, "build", "-o", tool, "."], cwd=GOSYM, env=env, check=True)
    out = subprocess.run([tool, binary, "7"], check=True, capture_output=True,
                         text=True).stdout
    want = {}
    for line in out.splitlines():
        pc, fn, file, no = line.split("\t")
        # gosym says "", -1 where the table has no line (padding): ours "", 0
        want[int(pc, 16)] = (fn, file, int(no)) if int(no) > 0 else (fn, "", 0)
    assert len(want) > 5000, len(want)
    got = cli(build_dir, binary, sorted(want))
    bad = [(hex(pc), w, got.get(pc)) for pc, w in want.items()
           if not isinstance(got.get(pc), list) or got[pc][-1][0] != w[0] or
           got[pc][0][1:] != w[1:]]
    assert not bad, (len(bad), len(want), bad[:5])


def corrupt_copies(src, tmp_path, n=48, sections_of=None):
    """Copies of @src with its pclntab scribbled (header bit flips,
    random bit flips, random and zeroed runs) and one cut short; where
    the table is: @sections_of's section headers (default @src's)."""
    from test_unwind_table import readelf_sections
    secs = readelf_sections(sections_of or src)
    _addr, off, size = next(v for k, v in secs.items() if k.endswith(".gopclntab"))
    with open(src, "rb") as f:
        data = f.read()
    rnd = random.Random(18)
    paths = []
    for i in range(n):
        buf = bytearray(data)
        kind = ("header", "flip", "bytes", "zero")[i % 4]
        if kind == "header":
            for _ in range(rnd.randint(1, 4)):
                buf[off + rnd.randrange(72)] ^= 1 << rnd.randrange(8)
        elif kind == "flip":
            for _ in range(rnd.randint(1, 64)):
                buf[off + rnd.randrange(size)] ^= 1 << rnd.randrange(8)
        else:
            at = off + rnd.randrange(size)
            for j in range(rnd.randint(1, 4096)):
                if at + j < off + size:
                    buf[at + j] = rnd.randrange(256) if kind == "bytes" else 0
        paths.append(str(tmp_path / f"v{i:02d}_{kind}"))
        with open(paths[-1], "wb") as f:
            f.write(buf)
    paths.append(str(tmp_path / "cut"))
    with open(paths[-1], "wb") as f:
        f.write(data[:off + size // 2])
    return paths


@pytest.mark.parametrize("variant", ["stripped", "noshdr", "pie"])
def test_corrupt_pclntab(tmp_path, go_build, variant):
    """Scribbled pclntabs (found by section, by magic, in a PIE): the
    lookup (built with ASan/UBSan) never crashes, reads out of bounds or
    hangs, at every function entry and every pc Go gave."""
    exe = str(tmp_path / "gsym_asan")
    subprocess.run(["gcc", "-O1", "-g", "-std=gnu11", "-D_GNU_SOURCE",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-I" + os.path.join(ROOT, "src"), "-I" + ROOT, "-o", exe,
                    os.path.join(ROOT, "tests/unit/test_go_symbols.c"),
                    *[os.path.join(ROOT, s) for s in SRC_FILES], "-ldw", "-lelf", "-lz"],
                   check=True)
    pcs = sorted({a + d for a in nm_funcs(go_build[NM_OF[variant]]) for d in (0, 7)})
    oracle = go_oracle(go_build[variant])
    bias = load_bias(go_build, variant, oracle)
    pcs += [pc - 1 - bias for tag in ("chain", "fault") for pc in oracle[tag][1]]
    bad = []
    stdin = "".join(f"{pc:x}\n" for pc in pcs)
    sections_of = go_build["stripped"] if variant == "noshdr" else None
    for path in corrupt_copies(go_build[variant], tmp_path, sections_of=sections_of):
        try:
            p = subprocess.run([exe, path, "-"], input=stdin, capture_output=True,
                               text=True, errors="replace", timeout=120)
            if p.returncode or "runtime error" in p.stderr:
                bad.append((path, p.returncode, p.stderr[-1500:]))
        except subprocess.TimeoutExpired:
            bad.append((path, "timeout", ""))
    assert not bad, bad[:3]


def shdr_field(path, section, field_off):
    """File offset of @section's section header field at @field_off."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        h = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, h)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == section.encode():
            return h + field_off
    raise AssertionError(f"no {section}")


def run_profd(profd_bin, pprof, tmp_path, binary, settle=True):
    """profd on @binary alone (test_dwarf.profile(); @settle: only the
    profiles written once its tables are in): (samples, stderr, paths)."""
    work, rc, err, paths = profile(profd_bin, tmp_path, [binary], "--no-gpu",
                                   only_workload=True, settle=settle)
    assert rc == 0, err
    assert paths, err
    samples = []
    for p in paths:
        samples += [s for s in pprof_raw_samples(pprof, p)
                    if s["labels"].get("pid") == str(work.pid)]
    return samples, err, paths


@pytest.mark.parametrize("variant", ["plain", "stripped", "pie"])
def test_profd_go_names(profd_bin, pprof, tmp_path, go_build, variant):
    """profd on the workload, read with Google's pprof: >= 95% of the
    frames in the workload's binary named (stripped: 0% before); every
    sample through main.spin ends with Go's chain (names), its callers'
    lines are Go's, and samples in spin's inlined copy of mix show mix as
    its own frame above spin, whose line is the line of that call, as Go's
    traceback of the fault there gives them."""
    binary = go_build[variant]
    oracle = go_oracle(binary)
    chain = [f for f in oracle["chain"][0]]
    assert [f[0] for f in chain] == CHAIN, chain
    fault = oracle["fault"][0]
    spin_at = [f[0] for f in fault].index("main.spin")
    spin_call_line = fault[spin_at][2]
    inlined_callee = fault[spin_at - 1][0]	# what Go shows just above spin
    samples, err, paths = run_profd(profd_bin, pprof, tmp_path / "out", binary)
    named = total = through = 0
    bad, spin_lines = [], {}
    for s in samples:
        frames = [f for f in s["frames"] if f["mapping"] == binary]
        total += s["value"] * len(frames)
        named += s["value"] * sum(1 for f in frames if f["function"])
        names = [f["function"] for f in frames]
        if "main.spin" not in names:
            continue
        through += s["value"]
        tail = frames[names.index("main.spin"):]
        if [f["function"] for f in tail] != CHAIN or \
           [(f["function"], f["file"], f["line"]) for f in tail[1:]] != chain[1:]:
            bad.append(tail)
        at = names.index("main.spin")
        if at and names[at - 1] == inlined_callee:
            # in spin's inlined copy of mix: its own frame, then spin's
            spin_lines[tail[0]["line"]] = spin_lines.get(tail[0]["line"], 0) + s["value"]
    note = ("\nnon-zero counters: " + "; ".join(counters(pprof, paths)) +
            "\nprofd stderr:\n" + err.strip())
    assert total and named >= NAMED_SHARE * total, f"{variant}: {named}/{total} named" + note
    assert through >= 20, f"{variant}: {through} samples through main.spin" + note
    assert not bad, (f"{variant}: {len(bad)} stacks through main.spin not Go's "
                     f"{chain}: {bad[:3]}" + note)
    assert spin_lines and max(spin_lines, key=spin_lines.get) == spin_call_line, (
        spin_lines, spin_call_line)
    assert all(f[1].endswith("go_symbols/main.go") for f in chain[:3])
    print(f"{variant}: {named}/{total} frames named, {through} samples through "
          f"main.spin, spin's lines {spin_lines}")


def test_profd_corrupt_section(profd_bin, pprof, tmp_path, go_build):
    """A stripped binary whose .gopclntab section header lies (its size
    past the segment: the runtime, which finds its table through
    moduledata, runs as ever) is profiled without a crash, its table
    counted as unreadable (go_pclntab_unreadable), its frames left
    unnamed rather than named by a guess."""
    src = go_build["stripped"]
    path = str(tmp_path / "gosymbols-badsection")
    with open(src, "rb") as f:
        buf = bytearray(f.read())
    struct.pack_into("<Q", buf, shdr_field(src, ".gopclntab", 0x20), 1 << 40)
    with open(path, "wb") as f:
        f.write(buf)
    os.chmod(path, 0o755)
    # every profile: the table is counted in the interval that opened it
    samples, err, paths = run_profd(profd_bin, pprof, tmp_path / "out", path,
                                    settle=False)
    frames = [f for s in samples for f in s["frames"] if f["mapping"] == path]
    assert frames, err
    assert not any(f["function"] for f in frames), [f for f in frames if f["function"]][:3]
    assert any(re.search(r"go_pclntab_unreadable\D*[1-9]", c)
               for c in counters(pprof, paths)), counters(pprof, paths)
