"""Split DWARF (gcc 12 -gsplit-dwarf; issue 18 point 1): the binary keeps
skeleton units and the line table, each object's functions and inlined
subroutines are in a .dwo file where the skeleton's DW_AT_comp_dir /
DW_AT_dwo_name say (or next to the binary). profd reads the .dwo with the
binary's DWARF (src/symbol/dwarf_split.c) and gives every location the
same Lines as without -gsplit-dwarf: the inlined functions innermost
first, each with its file:line. The skeleton alone would give the
leaf's line only (its .debug_line), without the functions inlined there.

Oracles: binutils 2.40's addr2line does not follow a .dwo (it prints
??:?), so each split binary's addresses are looked up with `addr2line -f
-i` in the same source built with the same flags without -gsplit-dwarf
(the test checks the two .text sections are byte for byte the same), and
the DWARF 5 build also with LLVM's llvm-symbolizer --inlining, which reads
the .dwo itself (LLVM 14 mislocates ranges relative to the unit's base,
-fno-reorder-functions' DW_RLE_offset_pair, so it is not asked there).

Variants: DWARF 5 (gcc 12's default), clang 14's DWARF 5 (its .dwo has no
line table: call files index the skeleton's, DWARF 5 3.1.3), DWARF 4 (GNU DebugFission:
DW_FORM_GNU_addr_index, ranges in the skeleton's .debug_ranges), one text
section (range lists relative to the unit's base address), and the
binary moved with its .dwo to another directory (the build directory the
skeleton names is gone; found next to the binary, as libdw and gdb do),
also when the skeleton names the .dwo by an absolute path (gcc -o /abs).
A .dwo that is missing, from another build (its id is not the
skeleton's) or a FIFO gives no lines, blocks nothing, and is counted once
as partial.lines_split_dwarf.

Needs root, like profd itself. About 40 s (profd's BPF load: ~3 s a run).
"""
import os
import shutil
import subprocess

import pytest

from test_native_lines import (addr2line, check_flags, check_locations, counter_sum, locations,
                               run_profd, src_line, SRC)

VARIANTS = {
    "dwarf5": [],
    "dwarf4": ["-gdwarf-4"],
    "one-section": ["-fno-reorder-functions"],
    "moved": [],
    "moved-abs": [],
    "clang": ["--cc=clang"],
}


def build(d, name, flags, split, absolute=False):
    """Build the test program in @d as @name (cwd @d: the .dwo lands there;
    the skeleton names it by a path relative to @d, or by its absolute
    path when @absolute, as gcc does for `-o /abs/path`)."""
    d.mkdir(parents=True, exist_ok=True)
    src = d / "lines.c"
    src.write_text(SRC.lstrip("\n"))
    exe = d / name
    cc = "gcc"
    if flags and flags[0].startswith("--cc="):
        cc, flags = flags[0][5:], flags[1:]
        if not shutil.which(cc):
            pytest.skip(f"no {cc}")
    subprocess.run([cc, "-O2", "-g", *(["-gsplit-dwarf"] if split else []), *flags,
                    "-fno-pie", "-no-pie", "-o", str(exe) if absolute else name, "lines.c"],
                   check=True, cwd=str(d))
    return exe


def text_bytes(binary, tmp):
    out = str(tmp) + ".text"
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(binary), out],
                   check=True)
    with open(out, "rb") as f:
        return f.read()


def llvm_symbolizer(binary, addrs):
    """{addr: [(function, file basename, line), ...]} from llvm-symbolizer
    --inlining, which reads the .dwo; None if it is not installed."""
    tool = shutil.which("llvm-symbolizer")
    if not tool:
        return None
    addrs = sorted(addrs)
    out = subprocess.run([tool, "--inlining", "-e", str(binary), *map(hex, addrs)],
                         check=True, capture_output=True, text=True).stdout
    res = {}
    for a, block in zip(addrs, out.strip("\n").split("\n\n")):
        ls = block.splitlines()
        res[a] = []
        for fn, loc in zip(ls[0::2], ls[1::2]):
            file, line = (loc.split(":") + ["0"])[:2]
            if file != "??" and line.isdigit() and int(line) > 0:
                res[a].append((fn, os.path.basename(file), int(line)))
    return res


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_split_dwarf_lines(profd_bin, pprof, tmp_path, variant):
    flags = VARIANTS[variant]
    exe = build(tmp_path / "build", "lines-split", flags, split=True,
                absolute=variant == "moved-abs")
    dwos = [f for f in os.listdir(tmp_path / "build") if f.endswith(".dwo")]
    assert dwos, os.listdir(tmp_path / "build")
    plain = build(tmp_path / "plain", "lines-plain", flags, split=False)
    assert text_bytes(exe, tmp_path / "a") == text_bytes(plain, tmp_path / "b")
    if variant.startswith("moved"):
        moved = tmp_path / "elsewhere"
        moved.mkdir()
        for f in [exe.name] + dwos:
            shutil.move(str(tmp_path / "build" / f), str(moved / f))
        shutil.rmtree(tmp_path / "build")
        exe = moved / exe.name
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path / "out", str(exe))
    locs = locations(samples, str(exe))
    assert locs, f"no location in {exe}: {samples[:3]}\n{err}"
    addrs = {k[1] and e["address"] or e["address"] - 1 for k, e in locs.items()}
    checked = check_locations(locs, addr2line(str(plain), addrs))
    assert checked >= 3, locs
    if variant == "dwarf5":
        llvm = llvm_symbolizer(exe, addrs)
        if llvm is not None:
            check_locations(locs, llvm)
    # the inlined chain is there, with its call sites' lines
    leaf = [e for e in locs.values() if e["lines"][0][0] == "leaf_inline"]
    assert leaf, locs
    # (clang ignores noipa: worker and spin are inlined further, into main)
    chain = [("mid_inline", "lines.c", src_line("MID_CALL")),
             ("worker", "lines.c", src_line("WORKER_CALL"))]
    assert all(e["lines"][1:3 if variant == "clang" else None] == chain for e in leaf), leaf
    check_flags(locs)
    assert counter_sum(pprof, paths, "lines_split_dwarf") == 0, err
    print(f"{variant}: {checked} locations match addr2line -i of the unsplit build, "
          f"{len(leaf)} with leaf_inline <- mid_inline <- worker")


@pytest.mark.parametrize("dwo", ["missing", "other-build", "fifo"])
def test_split_dwarf_without_its_dwo(profd_bin, pprof, tmp_path, dwo):
    """No usable .dwo: the frames keep their symbols, get no line (a line
    without the functions inlined there would put leaf_inline's line in
    worker), profd neither blocks (a FIFO is not opened for reading as a
    file) nor takes another build's .dwo (its id is not the skeleton's),
    and the object counts once as partial.lines_split_dwarf."""
    exe = build(tmp_path / "build", "lines-split", [], split=True)
    dwo_path = next(tmp_path / "build" / f for f in os.listdir(tmp_path / "build")
                    if f.endswith(".dwo"))
    os.unlink(dwo_path)
    if dwo == "other-build":
        other = build(tmp_path / "other", "lines-split", ["-O1"], split=True)
        shutil.copy(str(other.parent / dwo_path.name), str(dwo_path))
    elif dwo == "fifo":
        os.mkfifo(str(dwo_path))
    samples, paths, err = run_profd(profd_bin, pprof, tmp_path / "out", str(exe),
                                    "--profile-interval", "1")
    locs = locations(samples, str(exe))
    names = {fn for e in locs.values() for fn, _, _ in e["lines"]}
    assert {"worker", "spin"} <= names, (names, err)
    for e in locs.values():
        assert len(e["lines"]) == 1 and e["lines"][0][1:] == ("", 0), e
    assert counter_sum(pprof, paths, "lines_split_dwarf") == 1, err
