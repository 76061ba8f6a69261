"""PLT stubs named "symbol@plt" (src/symbol/plt.c), and profiles whose
unnamed frames another tool can name afterwards (issue 18, points 4, 5).

The oracle for PLT names is binutils' objdump, which labels every stub
it decodes "<memcpy@plt>", and for IBT lazy-binding .plt entries (which
objdump does not label) the relocation table and GOT as readelf prints
them. The programs are built here, one per x86-64 PLT layout gcc 12 /
binutils 2.40 produce: the lazy .plt, .plt.got (a function whose address
is also loaded from the GOT, linked -z now), .plt.sec (-fcf-protection
-z ibtplt) and a 16-byte .plt.got beside it. Each spins calling a
one-instruction shared-library function through its stub, so that a
real profd run as root catches samples in the stub; Google's pprof reads
the profile. perf is no oracle here: perf 6.1 names these samples
`_init` (the size-0 symbol before .plt, stretched over it).

Point 5: a -g program is stripped, its unstripped copy kept where profd
does not look; the profile profd writes leaves its frames unnamed with
has_functions false, and Google's pprof names them (function and line)
from $PPROF_BINARY_PATH/<build id>/<name>.

Needs root, gcc, binutils, elfutils (eu-unstrip); about 60 s.
"""
import os
import random
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, start, stop
from pprof_traces import pprof_raw_samples
from test_dwarf import counters, finish_profd, start_profd
from test_symbol import _corrupt_runs
from test_unwind_table import readelf_sections

TEST_SYM = os.path.join(ROOT, "build", "tests", "unit", "test_symbolize")
DURATION = "3"
MIN_PLT_SAMPLES = 5     # leaf samples in the stub each layout must have

LIB = "int tiny(int x) { return x + 1; }\n"
# Calls tiny() through its PLT stub forever; GOT=1 also loads tiny's
# address from the GOT (R_X86_64_GLOB_DAT), which puts the stub in .plt.got.
MAIN = r"""
#include <stdio.h>
int tiny(int x);
int main(void)
{
#if GOT
	int (*volatile keep)(int) = tiny;
	printf("%d\n", keep(0));
#endif
	int acc = 0;	/* in a register: the stub's jmp is a third of the loop */
	for (;;)
		acc = tiny(acc);
}
"""
# layout: (gcc flags, the section objdump's tiny@plt label must be in)
LAYOUTS = {
    "lazy": (["-DGOT=0"], ".plt"),
    "now_got": (["-DGOT=1", "-Wl,-z,now"], ".plt.got"),
    "ibt": (["-DGOT=0", "-fcf-protection", "-Wl,-z,ibtplt"], ".plt.sec"),
    "ibt_got": (["-DGOT=1", "-fcf-protection", "-Wl,-z,ibtplt"], ".plt.got"),
}
# The other linkers' lazy .plt (lld: sh_entsize 0), checked without a run.
OTHER_LINKERS = {
    "lld": (["-DGOT=1", "-fuse-ld=lld", "-Wl,-z,now"], ".plt"),
    "gold": (["-DGOT=1", "-fuse-ld=gold"], ".plt"),
}


def objdump_plt_labels(path):
    """{ELF vaddr: "name@plt"} of every stub objdump labels (demangled)."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    return {int(m.group(1), 16): m.group(2)
            for m in re.finditer(r"^([0-9a-f]+) <(.+@plt)>:$", out, re.M)}


def section_of(sections, vaddr):
    for name, (addr, _, size) in sections.items():
        if addr <= vaddr < addr + size and name.startswith(".plt"):
            return name
    return None


def symbolize(path, addrs):
    """{vaddr: name or None} through test_symbolize (profd's symbolizer)."""
    out = subprocess.run([TEST_SYM, "--no-debug", path] + [hex(a) for a in addrs],
                         check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines()[1:]:
        addr, rest = line.split(" ", 1)
        got[int(addr, 16)] = None if rest == "?" else rest.rsplit(" ", 1)[0]
    return got


def label_at(labels, sections, vaddr):
    """objdump's label for the stub holding @vaddr (stubs run from their
    label to the next label or their section's end)."""
    starts = [a for a in labels if a <= vaddr and
              section_of(sections, a) == section_of(sections, vaddr)]
    if not starts:
        return None
    a = max(starts)
    later = [b for b in labels if a < b]
    sec = sections[section_of(sections, a)]
    end = min(later + [sec[0] + sec[2]])
    return labels[a] if vaddr < end else None


@pytest.fixture(scope="module")
def plt_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("plt")
    (d / "tiny.c").write_text(LIB)
    (d / "main.c").write_text(MAIN)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(d / "libtiny.so"),
                    str(d / "tiny.c")], check=True)
    out = {}
    for name, (flags, _) in {**LAYOUTS, **OTHER_LINKERS}.items():
        if "-fuse-ld=" in " ".join(flags) and not shutil.which("ld." + name):
            continue
        out[name] = str(d / name)
        subprocess.run(["gcc", "-O2", *flags, "-o", out[name], str(d / "main.c"),
                        f"-L{d}", "-ltiny", f"-Wl,-rpath,{d}"], check=True)
    return out


@pytest.mark.parametrize("layout", sorted(LAYOUTS) + sorted(OTHER_LINKERS))
def test_every_stub_named_like_objdump(plt_build, layout):
    """Every address of every stub objdump labels gets its label's name,
    and the layout is the one the flags are for."""
    if layout not in plt_build:
        pytest.skip(f"no ld.{layout}")
    path = plt_build[layout]
    labels = objdump_plt_labels(path)
    sections = readelf_sections(path)
    tiny = [a for a, n in labels.items() if n == "tiny@plt"]
    assert len(tiny) == 1, labels
    assert section_of(sections, tiny[0]) == {**LAYOUTS, **OTHER_LINKERS}[layout][1], \
        (labels, sections)
    want = {}
    for a in labels:
        for off in range(0, 8):
            want[a + off] = label_at(labels, sections, a + off)
    got = symbolize(path, sorted(want))
    bad = {hex(a): (w, got.get(a)) for a, w in want.items() if got.get(a) != w}
    assert not bad, f"{layout}: (objdump, profd) differ: {bad}"


def test_stripped_with_debug_file(plt_build, tmp_path):
    """A stripped binary whose .symtab is in a separate debug file (found
    by .gnu_debuglink beside it): the debug file's PLT sections hold no
    data, the stubs are named from the binary's own, main from the debug
    file."""
    full = plt_build["ibt"]
    exe, dbg = str(tmp_path / "ibt"), str(tmp_path / "ibt.debug")
    subprocess.run(["objcopy", "--only-keep-debug", full, dbg], check=True)
    subprocess.run(["strip", "--strip-all", "-o", exe, full], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={dbg}", exe], cwd=tmp_path, check=True)
    labels = objdump_plt_labels(full)
    main = int(subprocess.run(["nm", full], check=True, capture_output=True, text=True)
               .stdout.split(" T main")[0].split()[-1], 16)
    p = subprocess.run([TEST_SYM, exe] + [hex(a) for a in sorted(labels)] + [hex(main)],
                       check=True, capture_output=True, text=True)
    assert f"debug {dbg}" in p.stderr, p.stderr
    got = {int(l.split()[0], 16): l.split(" ", 1)[1].rsplit(" ", 1)[0]
           for l in p.stdout.splitlines()[1:]}
    assert got == {**labels, main: "main"}


def test_stub_with_unknown_slot_unnamed(plt_build, tmp_path):
    """A stub patched to jump through a slot no relocation names stays an
    address; the others keep their names (names follow the slot, not the
    stub's index)."""
    path = plt_build["lazy"]
    labels = objdump_plt_labels(path)
    tiny = next(a for a, n in labels.items() if n == "tiny@plt")
    addr, off, _ = readelf_sections(path)[".plt"]
    data = bytearray(open(path, "rb").read())
    at = tiny - addr + off
    assert data[at:at + 2] == b"\xff\x25", data[at:at + 6].hex()
    disp = int.from_bytes(data[at + 2:at + 6], "little", signed=True)
    data[at + 2:at + 6] = (disp + 0x100000).to_bytes(4, "little", signed=True)
    bad = tmp_path / "patched"
    bad.write_bytes(bytes(data))
    got = symbolize(str(bad), sorted(labels))
    assert got == {a: (None if a == tiny else n) for a, n in labels.items()}


def test_corrupt_plt_never_crashes(plt_build, tmp_path):
    """Random bytes in what plt.c reads (the stubs, the relocations, the
    .dynsym and its strings, the GOT, the section headers): every run
    ends, none by a signal."""
    path = plt_build["ibt_got"]
    sections = readelf_sections(path)
    hot = [(off, off + size) for name, (_, off, size) in sections.items()
           if name.startswith((".plt", ".rela", ".dynsym", ".dynstr", ".got")) and size]
    data = open(path, "rb").read()
    shoff = int.from_bytes(data[0x28:0x30], "little")
    hot.append((shoff, len(data)))
    addrs = sorted(objdump_plt_labels(path)) + [a + 0x10 for a in objdump_plt_labels(path)]

    def variants(data):
        rng = random.Random(18)
        for i in range(300):
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                lo, hi = rng.choice(hot)
                b[rng.randrange(lo, hi)] = rng.randrange(256)
            yield f"variant {i}", bytes(b)

    crashes, codes = _corrupt_runs(path, tmp_path, variants, addrs)
    print("exit codes:", codes)
    assert not crashes, "\n".join(crashes)


def ibt_lazy_entries(path):
    """{vaddr of an IBT .plt entry: "name@plt"} as the relocations and the
    GOT say: entry i pushes i, .rela.plt's entry i names a GOT slot, and
    the slot's initial contents are the entry's address."""
    sections = readelf_sections(path)
    relocs = []
    for line in subprocess.run(["readelf", "-rW", path], check=True, capture_output=True,
                               text=True).stdout.split("Relocation section '.rela.plt'")[1] \
            .splitlines()[2:]:
        f = line.split()
        if len(f) < 5 or not re.fullmatch(r"[0-9a-f]+", f[0]):
            break
        relocs.append((int(f[0], 16), f[4].split("@")[0] if f[2] == "R_X86_64_JUMP_SLOT"
                       else None))
    data = open(path, "rb").read()
    addr, off, size = sections[".plt"]
    dis = subprocess.run(["objdump", "-d", "-j", ".plt", path], check=True,
                         capture_output=True, text=True).stdout
    out = {}
    for m in re.finditer(r"^\s*([0-9a-f]+):\s+f3 0f 1e fa\s+endbr64\n"
                         r"\s*[0-9a-f]+:\s+68 .*push\s+\$0x([0-9a-f]+)", dis, re.M):
        entry, idx = int(m.group(1), 16), int(m.group(2), 16)
        slot, name = relocs[idx]
        got_addr, got_off, _ = next(v for v in sections.values()
                                    if v[0] <= slot < v[0] + v[2])
        content = int.from_bytes(data[slot - got_addr + got_off:][:8], "little")
        if name and content == entry:
            out[entry] = name + "@plt"
    return out


def test_ibt_lazy_entries_named_from_got(plt_build):
    want = ibt_lazy_entries(plt_build["ibt"])
    assert "tiny@plt" in want.values(), want
    got = symbolize(plt_build["ibt"], sorted(want))
    assert got == want


def nm_ifuncs(path):
    """{address: {names}} of the IFUNC symbols nm -D lists as defined ("i"),
    version suffixes cut."""
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "i":
            got.setdefault(int(f[0], 16), set()).add(f[2].split("@")[0] + "@plt")
    return got


def test_system_binaries_like_objdump():
    """Real Debian binaries (libc, libstdc++, python3): every stub objdump
    names with a symbol gets that name; its *ABS*+0xADDR@plt stubs
    (R_X86_64_IRELATIVE: libc's own calls to memcpy, strlen, ...) get the
    name of an IFUNC nm -D lists at ADDR (the resolver the relocation
    runs), and stay unnamed where there is none."""
    paths = [p for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6",
                         "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                         "/usr/bin/python3.11", "/usr/bin/gcc-12")
             if os.path.exists(p)]
    assert paths
    total = irelative = 0
    for path in paths:
        labels = objdump_plt_labels(path)
        ifuncs = nm_ifuncs(path)
        got = symbolize(path, sorted(labels))
        for a, n in labels.items():
            m = re.fullmatch(r"\*ABS\*\+0x([0-9a-f]+)@plt", n)
            if m:
                want = ifuncs.get(int(m.group(1), 16))
                assert (got[a] in want) if want else got[a] is None, \
                    f"{path} {a:#x}: objdump {n}, IFUNCs there {want}, profd {got[a]}"
                irelative += bool(want)
            else:
                assert got[a] == n, f"{path} {a:#x}: objdump {n}, profd {got[a]}"
            total += 1
    assert total > 50, total
    assert irelative > 10, irelative


def elf_vaddr(frame, path, sections):
    """A frame's runtime address as an ELF virtual address of @path,
    through the file offset its mapping gives and the section holding it."""
    m = frame["map"]
    off = frame["address"] - m["start"] + m["offset"]
    for addr, soff, size in sections.values():
        if soff <= off < soff + size and addr:
            return addr + off - soff
    return None


def test_profile_names_plt_stubs(profd_bin, pprof, plt_build, tmp_path):
    """All layouts at once under one profd run: leaf samples in each
    program's stub section are named as objdump labels them."""
    works = {name: start([plt_build[name]], stdout=subprocess.DEVNULL) for name in LAYOUTS}
    try:
        pids = ",".join(str(w.pid) for w in works.values())
        prof, head = start_profd(profd_bin, tmp_path, "--duration", DURATION,
                                 "--pid", pids, "--no-gpu")
        rc, err, paths = finish_profd(prof, head, tmp_path)
    finally:
        for w in works.values():
            stop(w)
    assert rc == 0 and paths, err
    samples = []
    for p in paths:
        samples += pprof_raw_samples(pprof, p)
    for name in LAYOUTS:
        path = plt_build[name]
        labels = objdump_plt_labels(path)
        sections = readelf_sections(path)
        pid = str(works[name].pid)
        named, bad = 0, []
        for s in samples:
            if s["labels"].get("pid") != pid:
                continue
            leaf = next((f for f in s["frames"] if f["mapping"] == path), None)
            if leaf is None or leaf is not s["frames"][0]:
                continue
            vaddr = elf_vaddr(leaf, path, sections)
            if section_of(sections, vaddr) is None:
                continue
            want = label_at(labels, sections, vaddr)
            if leaf["function"] != want:
                bad.append((hex(vaddr), want, leaf["function"]))
            else:
                named += s["value"]
        assert not bad, f"{name}: (vaddr, objdump, profd): {bad}"
        assert named >= MIN_PLT_SAMPLES, f"{name}: {named} samples in tiny@plt\n{err}"
        print(f"{name}: {named} samples named tiny@plt")
    # libc's IRELATIVE stubs (objdump: *ABS*+0x...@plt) are named after
    # the IFUNC their addend resolves: no longer counted unnamed (they
    # were, 39 of them, when profd read libc's table)
    libc = next(f["mapping"] for s in samples for f in s["frames"]
                if "/libc.so" in f["mapping"])
    irelative = sum(n.startswith("*ABS*") for n in objdump_plt_labels(libc).values())
    stat = [int(m.group(1)) for c in counters(pprof, paths[-1:])
            for m in [re.search(r"\bstat\.plt_stubs_unnamed=(\d+)$", c)] if m]
    assert irelative > 0 and (not stat or stat[0] < irelative), (stat, irelative)


# --- point 5: pprof names a stripped binary's frames afterwards ------------

P5 = r"""
#include <string.h>
char buf[64] = "a string of some length";
__attribute__((noinline)) int hot_leaf(int x)
{						/* LEAF */
	for (int i = 0; i < 1000; i++)		/* LEAF */
		x = x * 31 + (int)strlen(buf + (x & 7));	/* LEAF */
	return x;				/* LEAF */
}						/* LEAF */
__attribute__((noinline)) int hot_middle(int x)
{						/* MIDDLE */
	return hot_leaf(x) + 1;			/* MIDDLE */
}						/* MIDDLE */
int main(void)
{
	volatile int acc = 0;
	for (;;)				/* MAIN */
		acc = hot_middle(acc);		/* MAIN */
}
"""


def marked_lines(src, mark):
    return {i + 1 for i, l in enumerate(src.splitlines()) if f"/* {mark} */" in l}


@pytest.mark.parametrize("given", ["unstripped", "debug_file"])
def test_pprof_symbolizes_stripped_binary(profd_bin, pprof, tmp_path, given):
    """profd leaves a stripped binary's frames as addresses in a mapping
    with its build id and has_functions false; pprof -symbolize=local,
    given the unstripped file by build id, names them with their lines.
    From a debug file alone (objcopy --only-keep-debug) pprof names
    nothing: its PT_LOAD segments have no file bytes, which pprof needs
    to place the mapping, so that case goes through eu-unstrip, which
    joins the stripped binary and its debug file into one pprof reads."""
    src = tmp_path / "p5.c"
    src.write_text(P5)
    full = str(tmp_path / "p5.full")
    # hot_middle stays in .dynsym: profd names it, so the mapping has named
    # and unnamed frames and must not claim has_functions
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer",
                    "-Wl,--export-dynamic-symbol=hot_middle", "-o", full, str(src)],
                   check=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    exe = str(run_dir / "p5")
    subprocess.run(["strip", "--strip-all", "-o", exe, full], check=True)
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(
        ["readelf", "-n", exe], check=True, capture_output=True, text=True).stdout).group(1)
    store = tmp_path / "binaries"
    (store / build_id).mkdir(parents=True)
    if given == "unstripped":
        shutil.copy(full, store / build_id / "p5")
    else:
        dbg = str(tmp_path / "p5.debug")
        subprocess.run(["objcopy", "--only-keep-debug", full, dbg], check=True)
        subprocess.run(["eu-unstrip", "-o", str(store / build_id / "p5"), exe, dbg],
                       check=True)

    work = start([exe])
    try:
        prof, head = start_profd(profd_bin, tmp_path / "out", "--duration", DURATION,
                                 "--pid", str(work.pid), "--no-gpu")
        rc, err, paths = finish_profd(prof, head, tmp_path / "out")
    finally:
        stop(work)
    assert rc == 0 and paths, err

    def frames_in_exe(samples):
        return [f for s in samples if s["labels"].get("pid") == str(work.pid)
                for f in s["frames"] if f["mapping"].endswith("/p5")]

    env = dict(os.environ, PPROF_BINARY_PATH=str(store))
    before, after = [], []
    for p in paths:
        before += frames_in_exe(pprof_raw_samples(pprof, p))
        out = subprocess.run([pprof, "-raw", "-symbolize=local", p], env=env,
                             check=True, capture_output=True, text=True)
        assert "build-id mismatch" not in out.stderr, out.stderr
        after += frames_in_exe(pprof_raw_samples(pprof, p, "-symbolize=local", env=env))
    assert before, err
    # profd: hot_middle named (.dynsym), the rest addresses (strlen@plt
    # too, when sampled), build id, has_functions false
    assert {f["function"] for f in before} <= {None, "hot_middle", "strlen@plt"}, before[:5]
    assert {None, "hot_middle"} <= {f["function"] for f in before}
    assert all(f["map"]["has_functions"] is False for f in before)
    raw = subprocess.run([pprof, "-raw", "-symbolize=none", paths[0]], check=True,
                         capture_output=True, text=True).stdout
    assert re.search(rf" {re.escape(exe)} {build_id}", raw), raw[-2000:]

    want = {"hot_leaf": marked_lines(P5, "LEAF"), "hot_middle": marked_lines(P5, "MIDDLE"),
            "main": marked_lines(P5, "MAIN")}
    seen = {}
    for f in after:
        if f["function"] in want:
            assert f["file"].endswith("p5.c"), f
            assert f["line"] in want[f["function"]], (f, want)
            seen[f["function"]] = seen.get(f["function"], 0) + 1
    assert set(seen) == set(want), (seen, after[:10])

