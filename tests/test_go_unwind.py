"""Go's stacks: the real profd against tests/workloads/go (built here with
/usr/bin/go, with and without -ldflags='-s -w', as a PIE, and -s -w
builds with their section headers removed), read back with Google's
pprof.

Go runs runtime code on the thread's system stack (g0) through
runtime.systemstack, runtime.mcall and runtime.morestack; a walk that
reaches them from g0 must continue on the goroutine's stack
(m.curg.sched), as Go's own traceback does (bpf/unwind_go.bpf.h,
src/unwind/go.c). Go assembly such as crypto/sha256.block uses rbp as a
general register, so only the unwind rows (.debug_frame, or the pclntab's
pcsp table in a -s -w binary) walk through it.

The oracle is Go itself: each hot function of the workload prints the
chain runtime.Callers gives from it to the goroutine's bottom
(runtime.goexit); every sample through that function must end with
exactly that chain. Every sample through runtime.systemstack must have,
as the frame below it, a function whose code calls runtime.systemstack
(objdump of the binary), and end at runtime.goexit.

Frames are named from their addresses with the unstripped binary's
symbols (nm; the PIE's for a PIE) in every variant: -s -w changes no code
address (checked: the two pclntabs give the same unwind rows), and the
names profd gives the stripped binary's functions (from its pclntab) are
tests/test_go_symbols.py's subject, not this test's. A PIE's addresses
are taken back to the file's through the profile's mapping (start, file
offset) and the binary's PT_LOADs.

A -s -w binary has no .debug_frame: its rows come from the pclntab
alone, which src/util/go_elf.c finds by section (.gopclntab; a PIE's
.data.rel.ro.gopclntab) or, with no section headers (or none of its own:
a host-linked PIE's is inside .data.rel.ro), by its magic. Without them
the walk would fall back to frame pointers, which crypto/sha256.block
does not keep, and would stop at runtime.systemstack on g0.

Only profiles written once profd unwinds the workload with its tables
count (test_dwarf.settled(): before that, frame pointers, which stop at
crypto/sha256.block). Needs root and /usr/bin/go (scripts/deps.sh
--test installs golang-go); about 30 s.
"""
import bisect
import os
import re
import shutil
import struct
import subprocess

import pytest

from conftest import ROOT
from pprof_traces import pprof_raw_samples
from test_dwarf import counters, profile

SRC = os.path.join(ROOT, "tests", "workloads", "go")
GO = shutil.which("go", path="/usr/bin:/usr/local/go/bin:" + os.environ.get("PATH", ""))
KERNEL_START = 0xffff800000000000
MIN_SYSTEMSTACK = 10    # samples through systemstack a run must have
GOEXIT_SHARE = 0.98     # of those, ending at runtime.goexit
COMPLETE_SHARE = 0.95   # of all samples, ending at a ROOT
# Where a Go stack ends: a goroutine's bottom, an M's g0 (sysmon,
# scheduler without a goroutine: mcall, morestack's newstack), the main
# thread's start.
ROOTS = {"runtime.goexit", "runtime.mstart", "runtime.mcall", "runtime.morestack",
         "runtime.rt0_go"}

pytestmark = pytest.mark.skipif(GO is None, reason="no Go toolchain (golang-go)")


# the builds, and the unstripped one whose symbols name each one's addresses
NM_OF = {"plain": "plain", "stripped": "plain", "noshdr": "plain",
         "pie-plain": "pie-plain", "pie": "pie-plain", "pie-noshdr": "pie-plain"}


@pytest.fixture(scope="module")
def go_build(tmp_path_factory):
    """{variant: path}: the workload built plain, with -s -w, as a PIE
    (with and without -s -w), and the -s -w builds (PIE or not) with
    their section headers removed."""
    out = tmp_path_factory.mktemp("go-workload")
    env = dict(os.environ, GOCACHE=str(out / "cache"), GOFLAGS="-mod=mod",
               CGO_ENABLED="0", GOTOOLCHAIN="local")
    paths = {}
    for variant, flags in (("plain", []), ("stripped", ["-ldflags=-s -w"]),
                           ("pie-plain", ["-buildmode=pie"]),
                           ("pie", ["-buildmode=pie", "-ldflags=-s -w"])):
        dst = str(out / f"goworkload-{variant}")
        subprocess.run([GO, "build", *flags, "-o", dst, "."], cwd=SRC, env=env,
                       check=True)
        paths[variant] = dst
    for variant, src in (("noshdr", "stripped"), ("pie-noshdr", "pie")):
        paths[variant] = strip_section_headers(paths[src], str(out / f"goworkload-{variant}"))
    return paths


def strip_section_headers(src, dst):
    """@src copied to @dst without its section headers (e_shoff, e_shnum
    zeroed: only the segments left, as llvm-objcopy --strip-sections
    leaves them); returns @dst."""
    with open(src, "rb") as f:
        buf = bytearray(f.read())
    struct.pack_into("<Q", buf, 0x28, 0)            # e_shoff
    struct.pack_into("<HHH", buf, 0x3a, 0, 0, 0)    # e_shentsize, e_shnum, e_shstrndx
    with open(dst, "wb") as f:
        f.write(buf)
    os.chmod(dst, 0o755)
    return dst


def load_segments(binary):
    """[(file offset, vaddr, file size)] of @binary's PT_LOADs."""
    out = subprocess.run(["readelf", "-lW", binary], check=True, capture_output=True,
                         text=True).stdout
    return [(int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
            for m in re.finditer(r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+"
                                 r"\s+0x([0-9a-f]+)", out, re.M)]


def go_chains(binary, want=None):
    """{hot function: [it, its callers..., runtime.goexit]} as the
    workload prints them (runtime.Callers) before "ready"; @want: the hot
    functions it must print (default: four)."""
    proc = subprocess.Popen([binary], stdout=subprocess.PIPE, text=True)
    chains = {}
    try:
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            m = re.match(r"chain (\S+) (\S+)$", line.strip())
            if m:
                chains[m.group(1)] = m.group(2).split(";")
    finally:
        proc.kill()
        proc.wait()
    if want is None:
        assert len(chains) == 4, chains
    else:
        assert sorted(chains) == sorted(want), chains
    return chains


class Symbols:
    """Function names by address from `nm` of an unstripped binary."""

    def __init__(self, binary):
        out = subprocess.run(["nm", "-n", "--defined-only", binary], check=True,
                             capture_output=True, text=True).stdout
        self.addrs, self.names = [], []
        for line in out.splitlines():
            parts = line.split(maxsplit=2)
            if len(parts) == 3 and parts[1] in "Tt":
                self.addrs.append(int(parts[0], 16))
                self.names.append(go_name(parts[2]))

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else f"0x{addr:x}"


def go_name(sym):
    """Go's name of an ELF symbol: without the ABI suffix."""
    return sym[:-len(".abi0")] if sym.endswith(".abi0") else sym


def systemstack_callers(binary):
    """Functions whose code calls runtime.systemstack directly (objdump)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True,
                         capture_output=True, text=True).stdout
    callers, fn = set(), None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            fn = go_name(m.group(1))
        elif fn and re.search(r"\bcall\s+[0-9a-f]+ <runtime\.systemstack(\.abi0)?>", line):
            callers.add(fn)
    return callers


def user_frames(sample, syms, binary, segs):
    """The sample's (pprof_raw_samples()) user frames, leaf first: those
    of @binary named by @syms at their file address (the run-time one
    back through the profile's mapping and @binary's PT_LOADs @segs;
    return addresses looked up a byte back, the leaf as it is), others
    by their mapping."""
    locs = []
    for f in sample["frames"]:
        if f["address"] >= KERNEL_START or (locs and locs[-1]["loc"] == f["loc"]):
            continue        # kernel, or an inlined frame of the same location
        locs.append(f)
    names = []
    for i, f in enumerate(locs):
        a, mp = f["address"], f["map"]
        if not mp or mp["file"] != binary:
            names.append(mp["file"] if mp else f"0x{a:x}")
            continue
        off = a - mp["start"] + mp["offset"]
        vaddr = next((off - o + v for o, v, n in segs if o <= off < o + n), None)
        names.append(syms.name(vaddr if i == 0 else vaddr - 1) if vaddr is not None
                     else f"0x{a:x}")
    return names


def table(build_dir, binary):
    """{vaddr: (cfa, rbp)} of @binary's unwind rows (test_unwind_dump)."""
    out = subprocess.run([os.path.join(build_dir, "tests", "unit", "test_unwind_dump"),
                          binary], check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            rows[int(parts[0], 16)] = (parts[1], parts[2])
    return rows


def test_go_rows(build_dir, go_build):
    """The table compiler's Go rows (src/unwind/go.c), no BPF: the -s -w
    binary's rows from the pclntab's pcsp equal the plain one's from
    .debug_frame; systemstack, mcall, morestack, asmcgocall (not its ABI
    wrapper) get their GO_SWITCH row with runtime.m's curg offset and g at
    fs-8, nanotime1 and time.now theirs with m.vdsoSP's; the
    TOPFRAME functions an outermost row, Go's sigreturn a signal row
    starting a byte early, sigtramp keeps its CFI. The curg offset profd
    uses for this Go (src/unwind/go.c's version table), and vdsoSP's, are
    checked against the plain binary's DWARF."""
    plain, stripped = (table(build_dir, go_build[v]) for v in ("plain", "stripped"))
    syms = {}
    for line in subprocess.run(["nm", go_build["plain"]], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    info = go_info(build_dir, go_build["plain"])
    version = subprocess.run([GO, "version"], capture_output=True, text=True).stdout
    assert info["version"] in version.split(), (info, version)
    # the offset profd uses (its version table, or DWARF) is the DWARF's
    assert int(info["dwarf_curg"]) > 0 and info["curg"] == info["dwarf_curg"], info
    assert int(info["dwarf_vdso_sp"]) > 0 and info["vdso_sp"] == info["dwarf_vdso_sp"], info
    assert info["tls_g_off"] == "-8", info
    vdso_sp = int(info["vdso_sp"])
    curg = int(info["curg"])
    stripped_info = go_info(build_dir, go_build["stripped"])
    assert stripped_info["dwarf_result"] != "0", stripped_info
    if stripped_info["curg"] == "0":
        pytest.skip(f"{info['version']} is not in src/unwind/go.c's version table: "
                    "a -s -w binary gets no switch rows")
    for sym, kind in (("runtime.systemstack.abi0", "go-systemstack"),
                      ("runtime.mcall", "go-mcall"),
                      ("runtime.morestack.abi0", "go-morestack")):
        cfa, rbp = plain[syms[sym]]
        assert cfa == kind, (sym, cfa, rbp)
        m = re.match(r"curg=(\d+),tls=(-?\d+)$", rbp)
        assert m and int(m.group(2)) == -8 and int(m.group(1)) == curg, rbp
    for sym in ("runtime.nanotime1.abi0", "time.now"):
        assert plain[syms[sym]] == ("go-vdso", f"curg={vdso_sp},tls=-8"), sym
    # the ABI wrapper named like asmcgocall is no switch
    assert plain[syms["runtime.asmcgocall.abi0"]] == ("go-asmcgocall", f"curg={curg},tls=-8")
    assert plain[syms["runtime.asmcgocall"]][0].startswith("rsp+")
    for sym in ("runtime.goexit.abi0", "runtime.mstart.abi0", "runtime.rt0_go.abi0"):
        assert plain[syms[sym]][0] == "outer", sym
    assert plain[syms["runtime.sigreturn.abi0"] - 1][0] == "sig"
    assert plain[syms["runtime.sigtramp.abi0"]][0].startswith("rsp+")
    assert plain == stripped


@pytest.mark.parametrize("variant,like,found", [("pie", "pie-plain", "section"),
                                                ("noshdr", "plain", "magic"),
                                                ("pie-noshdr", "pie-plain", "magic")])
def test_go_rows_found(build_dir, go_build, variant, like, found):
    """The -s -w PIE (its pclntab in .data.rel.ro.gopclntab, its text
    start and moduledata relocated) and the section-less -s -w builds
    (the pclntab found by its magic: in the read-only segment, in a PIE's
    RELRO; the build info by its magic in a writable segment): their rows,
    from the pclntab alone, equal those of the unstripped build of the
    same mode (.debug_frame, and the pclntab's switch rows), the Go
    version and so m.curg's offset known."""
    info = go_info(build_dir, go_build[variant])
    plain = go_info(build_dir, go_build[like])
    assert info["result"] == "0" and info["pclntab"] == found, info
    assert plain["result"] == "0" and plain["pclntab"] == "section", plain
    assert info["version"] == plain["version"] != "-", (info, plain)
    assert info["curg"] == plain["dwarf_curg"] != "0", (info, plain)
    assert int(info["switch_funcs"]) >= 6 and int(info["pcsp_rows"]) > 1000, info
    rows = table(build_dir, go_build[variant])
    assert rows == table(build_dir, go_build[like])
    syms = {}
    for line in subprocess.run(["nm", go_build[like]], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    assert rows[syms["runtime.systemstack.abi0"]][0] == "go-systemstack"
    assert rows[syms["crypto/sha256.block.abi0"]][0].startswith("rsp+"), \
        rows[syms["crypto/sha256.block.abi0"]]


def go_info(build_dir, binary):
    """test_unwind_dump --go: {key: value} of what src/unwind/go.c finds."""
    out = subprocess.run([os.path.join(build_dir, "tests", "unit", "test_unwind_dump"),
                          "--go", binary], check=True, capture_output=True, text=True).stdout
    return dict(kv.split("=", 1) for kv in out.split())


def run(profd_bin, pprof, tmp_path, binary):
    work, rc, err, paths = profile(profd_bin, tmp_path, [binary], "--no-gpu",
                                   only_workload=True, settle=True)
    assert rc == 0, err
    assert paths, err
    samples = []
    for p in paths:
        samples += [s for s in pprof_raw_samples(pprof, p)
                    if s["labels"].get("pid") == str(work.pid)]
    return samples, err, paths


def show(stacks, n=8):
    return "\n".join(f"  {v:4d}  {' <- '.join(k)}" for k, v in
                     sorted(stacks.items(), key=lambda kv: -kv[1])[:n])


@pytest.mark.parametrize("variant", ["plain", "stripped", "pie", "noshdr", "pie-noshdr"])
def test_go_stacks(profd_bin, pprof, tmp_path, build_dir, go_build, variant):
    """Every sample through a hot function ends with Go's chain from it
    (runtime.Callers); through runtime.systemstack, with a caller of it
    below and runtime.goexit at the bottom; through crypto/sha256.block
    (rbp a general register), down to main.hashBig; >= 95% at a root."""
    plain = go_build[NM_OF[variant]]
    known = go_info(build_dir, go_build["plain"])
    if known["curg"] == "0" or (variant != "plain" and known["curg_from_dwarf"] == "1"):
        pytest.skip("this Go's m.curg offset is unknown without DWARF "
                    "(not in src/unwind/go.c's version table)")
    chains = go_chains(plain)
    syms = Symbols(plain)
    segs = load_segments(plain)
    callers = systemstack_callers(plain)
    assert "runtime.newproc" in callers, sorted(callers)[:20]
    samples, err, paths = run(profd_bin, pprof, tmp_path, go_build[variant])
    assert samples, err

    through_ss, ss_bad_caller, ss_no_goexit = {}, {}, {}
    hot_bad, hot_n = {}, dict.fromkeys(chains, 0)
    sha_bad, sha_n = {}, 0
    incomplete, total = {}, 0
    for s in samples:
        frames = user_frames(s, syms, go_build[variant], segs)
        key = tuple(frames)
        total += s["value"]
        if not frames or frames[-1] not in ROOTS:
            incomplete[key] = incomplete.get(key, 0) + s["value"]
        if "runtime.systemstack" in frames:
            through_ss[key] = through_ss.get(key, 0) + s["value"]
            i = frames.index("runtime.systemstack")
            if i + 1 >= len(frames) or frames[i + 1] not in callers:
                ss_bad_caller[key] = ss_bad_caller.get(key, 0) + s["value"]
            if frames[-1] != "runtime.goexit":
                ss_no_goexit[key] = ss_no_goexit.get(key, 0) + s["value"]
        if "crypto/sha256.block" in frames:
            sha_n += s["value"]
            if "main.hashBig" not in frames:
                sha_bad[key] = sha_bad.get(key, 0) + s["value"]
        for hot, want in chains.items():
            if hot in frames:
                hot_n[hot] += s["value"]
                if frames[frames.index(hot):] != want:
                    hot_bad[key] = hot_bad.get(key, 0) + s["value"]
    total_ss = sum(through_ss.values())
    note = ("\nnon-zero counters: " + "; ".join(counters(pprof, paths)) +
            "\nprofd stderr:\n" + err.strip())

    assert total_ss >= MIN_SYSTEMSTACK, (
        f"{variant}: {total_ss} samples through runtime.systemstack" + note)
    assert not ss_bad_caller, (
        f"{variant}: runtime.systemstack followed by a function that does not "
        f"call it:\n{show(ss_bad_caller)}" + note)
    assert sum(ss_no_goexit.values()) <= (1 - GOEXIT_SHARE) * total_ss, (
        f"{variant}: stacks through runtime.systemstack not ending at "
        f"runtime.goexit ({sum(ss_no_goexit.values())}/{total_ss}):\n"
        f"{show(ss_no_goexit)}" + note)
    assert sha_n >= MIN_SYSTEMSTACK, f"{variant}: {sha_n} samples in sha256.block" + note
    assert not sha_bad, (
        f"{variant}: crypto/sha256.block not walked to main.hashBig:\n"
        f"{show(sha_bad)}" + note)
    assert not hot_bad, (
        f"{variant}: stacks through a hot function whose chain is not Go's; "
        f"Go's: {chains}\n{show(hot_bad)}" + note)
    assert sum(incomplete.values()) <= (1 - COMPLETE_SHARE) * total, (
        f"{variant}: {sum(incomplete.values())}/{total} samples not ending at one "
        f"of {sorted(ROOTS)}:\n{show(incomplete)}" + note)
    assert any("stat.go_stack_switches" in c for c in counters(pprof, paths)), note
    print(f"{variant}: {len(samples)} stacks, {total_ss} samples through "
          f"systemstack, {sum(incomplete.values())}/{total} incomplete; "
          f"per hot function: {hot_n}")


def test_corrupt_pclntab(tmp_path, go_build):
    """A corrupt .gopclntab (header, function table, pcsp data: bit flips,
    random and zeroed runs) in the -s -w binary, whose rows come from it
    alone: the compiler (built with ASan/UBSan) neither crashes nor writes
    an unsorted table."""
    from test_unwind_table import build_asan, readelf_sections
    import random
    exe = build_asan(str(tmp_path))
    src = go_build["stripped"]
    _addr, off, size = readelf_sections(src)[".gopclntab"]
    with open(src, "rb") as f:
        data = f.read()
    rnd = random.Random(16)
    bad = []
    for i in range(80):
        buf = bytearray(data)
        kind = ("header", "flip", "bytes", "zero")[i % 4]
        if kind == "header":
            for _ in range(rnd.randint(1, 4)):
                buf[off + rnd.randrange(72)] ^= 1 << rnd.randrange(8)
        elif kind == "flip":
            for _ in range(rnd.randint(1, 16)):
                buf[off + rnd.randrange(size)] ^= 1 << rnd.randrange(8)
        else:
            at = off + rnd.randrange(size)
            for j in range(rnd.randint(1, 256)):
                if at + j < off + size:
                    buf[at + j] = rnd.randrange(256) if kind == "bytes" else 0
        path = str(tmp_path / f"v{i:02d}_{kind}")
        with open(path, "wb") as f:
            f.write(buf)
        for args in (["--go", path], [path]):
            p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
            if p.returncode not in (0, 2) or "runtime error" in p.stderr:
                bad.append((path, args[0], p.returncode, p.stderr[-1500:]))
                continue
            pcs = [int(l.split()[0], 16) for l in p.stdout.splitlines()
                   if l and not l.startswith("#") and len(l.split()) == 3]
            if args[0] != "--go" and pcs and (pcs != sorted(set(pcs))):
                bad.append((path, "unsorted rows", p.returncode, ""))
    assert not bad, bad[:3]


def test_overlapping_segments(tmp_path, go_build):
    """A section-less -s -w binary with one more read-only PT_LOAD, listed
    first, overlapping the start of the one holding the pclntab (its NOTE
    header made a LOAD of 8 KiB): the scan (in the compiler built with
    ASan/UBSan) reads each segment's own bytes, never past the shorter
    one's, and still finds the table: the same rows as without it."""
    from test_unwind_table import build_asan
    exe = build_asan(str(tmp_path))
    src = go_build["noshdr"]
    with open(src, "rb") as f:
        buf = bytearray(f.read())
    phoff, = struct.unpack_from("<Q", buf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", buf, 0x36)
    heads = [phoff + i * phentsize for i in range(phnum)]
    note = next(h for h in heads if struct.unpack_from("<I", buf, h)[0] == 4)   # PT_NOTE
    rodata = next(h for h in heads if struct.unpack_from("<II", buf, h) == (1, 4))  # LOAD R
    assert note < rodata
    off, vaddr = struct.unpack_from("<QQ", buf, rodata + 8)
    # PT_LOAD, R: [vaddr - 4 KiB, vaddr + 4 KiB) of the same file bytes
    struct.pack_into("<IIQQQQQQ", buf, note, 1, 4, off - 0x1000, vaddr - 0x1000,
                     vaddr - 0x1000, 0x2000, 0x2000, 0x1000)
    path = str(tmp_path / "overlap")
    with open(path, "wb") as f:
        f.write(buf)
    outs = {}
    for name, binary in (("overlap", path), ("noshdr", src)):
        for args in (["--go", binary], [binary]):
            p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
            assert p.returncode == 0 and "runtime error" not in p.stderr, \
                (name, args[0], p.returncode, p.stderr[-3000:])
            outs[name, args[0]] = p.stdout
    info = dict(kv.split("=", 1) for kv in outs["overlap", "--go"].split())
    assert info["result"] == "0" and info["pclntab"] == "magic", info
    rows = [l for l in outs["overlap", path].splitlines() if not l.startswith("#")]
    assert len(rows) > 1000
    assert rows == [l for l in outs["noshdr", src].splitlines() if not l.startswith("#")]


CGO_PROG = """package main

/*
static int add(int a, int b) { return a + b; }
*/
import "C"

import "fmt"

func main() { fmt.Println(C.add(1, 2)) }
"""


@pytest.mark.parametrize("mode", ["exe", "pie"])
def test_cgo_rows(build_dir, tmp_path, mode):
    """A cgo binary linked with -s -w keeps the .eh_frame of its C code
    and nothing for its Go code: go.c fills the gaps from the pcsp
    tables, so its rows equal those of the same program with
    .debug_frame (and so do they with its section headers removed);
    asmcgocall (C on g0) and cgocallback (C calling Go
    back) are switch rows, crosscall2 (called by C) restores rbp (saved
    at CFA-16 once its prologue stored it). As a PIE the host linker
    merges the pclntab into .data.rel.ro: found by its magic there."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc for cgo")
    (tmp_path / "main.go").write_text(CGO_PROG)
    (tmp_path / "go.mod").write_text("module cgorows\n\ngo 1.19\n")
    env = dict(os.environ, GOCACHE=str(tmp_path / "cache"), CGO_ENABLED="1",
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    mflags = ["-buildmode=pie"] if mode == "pie" else []
    for name, flags in (("plain", []), ("stripped", ["-ldflags=-s -w"])):
        subprocess.run([GO, "build", *mflags, *flags, "-o", name, "."], cwd=tmp_path,
                       env=env, check=True)
    plain, stripped = (str(tmp_path / n) for n in ("plain", "stripped"))
    noshdr = strip_section_headers(stripped, str(tmp_path / "noshdr"))
    assert ".eh_frame" in readelf_sections(stripped)
    assert ".debug_frame" not in readelf_sections(stripped)
    assert (".gopclntab" in readelf_sections(stripped)) == (mode == "exe")
    rows = table(build_dir, plain)
    assert rows == table(build_dir, stripped)
    assert rows == table(build_dir, noshdr)
    assert go_info(build_dir, stripped)["pclntab"] == ("section" if mode == "exe" else "magic")
    syms = {}
    for line in subprocess.run(["nm", plain], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    curg = go_info(build_dir, stripped)["curg"]
    if curg != "0":
        assert rows[syms["runtime.asmcgocall.abi0"]][0] == "go-asmcgocall"
        # cgocallback's rows keep their CFA offsets (entry, frame, ret)
        cb = [r for a, r in sorted(rows.items())
              if syms["runtime.cgocallback.abi0"] <= a < syms["runtime.cgocallback.abi0"] + 0x120]
        assert cb[0] == ("go-cgocallback", f"curg={curg},tls=-8,cfa=8"), cb
        assert ("go-cgocallback", f"curg={curg},tls=-8,cfa=40") in cb, cb
    cc2 = [r for a, r in sorted(rows.items())
           if syms["crosscall2"] <= a < syms["crosscall2"] + 0x60]
    assert cc2[0] == ("rsp+8", "u") and cc2[1][1] == "u", cc2
    assert ("rsp+56", "c-16") in cc2, cc2


def readelf_sections(path):
    from test_unwind_table import readelf_sections as sections
    return sections(path)
