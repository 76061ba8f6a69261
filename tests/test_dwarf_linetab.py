"""profd's own line table decoder (src/symbol/dwarf_linetab.c) against
libdw's, row by row (issue 18: lines in bounded memory).

profd decodes each unit's DWARF line number program itself into 12-byte
rows (libdw keeps 40 bytes a row until its whole Dwarf is ended, and
builds its table through 56-byte list nodes: sqlite3's one big unit took
~24 MB at its peak). The table must be the one libdw gives: the same
rows in the same order (address; an end of sequence before other rows
at one address; program order; the highest row ending a sequence), the
same file names joined with their directories, the same file table for
DW_AT_call_file, and the same answer to a lookup at each row's address
and the byte before it (build/tests/unit/test_dwarf_linetab FILE
compares all of it on every unit of FILE).

Files: C++ built here by gcc with DWARF 2, 3, 4 and 5, by clang with 4
and 5 (DWARF 5 file entries with MD5 and .debug_line_str), with
compressed sections (SHF_COMPRESSED and GNU .zdebug), with split DWARF
(the skeleton's line table); profd itself; libc's debug file (Debian's
libc6-dbg); a -g Python's libpython when pyenv has one.
"""
import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import unit_program

SRC = r"""
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

static int count(int x)
{
	std::map<int, std::string> m;
	for (int i = 0; i < x; i++)
		m[i] = std::to_string(i);
	return (int)m.size();
}

int main(int argc, char **argv)
{
	std::vector<int> a(argc * 100);
	std::sort(a.begin(), a.end());
	printf("%d\n", count(argc));
	return a[0];
}
"""

BUILDS = {
    "gcc-dwarf2": ["g++", "-O0", "-gdwarf-2"],
    "gcc-dwarf3": ["g++", "-O2", "-gdwarf-3"],
    "gcc-dwarf4": ["g++", "-O2", "-gdwarf-4"],
    "gcc-dwarf5": ["g++", "-O2", "-gdwarf-5"],
    "gcc-gz": ["g++", "-O2", "-g", "-gz"],
    "gcc-zdebug": ["g++", "-O2", "-g", "-gz=zlib-gnu"],
    "gcc-gc-sections": ["g++", "-O2", "-g", "-ffunction-sections", "-Wl,--gc-sections"],
    "clang-dwarf4": ["clang++", "-O1", "-gdwarf-4"],
    "clang-dwarf5": ["clang++", "-O2", "-gdwarf-5"],
    "clang-split": ["clang++", "-O2", "-g", "-gsplit-dwarf"],
}


@pytest.fixture(scope="module")
def tool():
    return unit_program("test_dwarf_linetab")


def build_program(tmp_path, build):
    """SRC built as BUILDS[@build] says; its path (skips without the compiler)."""
    cmd = BUILDS[build]
    if not shutil.which(cmd[0]):
        pytest.skip(f"no {cmd[0]}")
    src = tmp_path / "a.cpp"
    src.write_text(SRC)
    out = tmp_path / "a.out"
    subprocess.run([*cmd, "-o", str(out), str(src)], check=True, cwd=tmp_path)
    return out


def compare(tool, path):
    r = subprocess.run([tool, path], capture_output=True, text=True, timeout=300)
    m = re.search(r"units=(\d+) rows=(\d+) files=(\d+) mismatches=(\d+) unsupported=(\d+)",
                  r.stdout)
    assert m, r.stdout + r.stderr
    units, rows, files, mismatches, unsupported = map(int, m.groups())
    assert r.returncode == 0 and mismatches == 0, r.stdout + r.stderr
    assert units > 0 and rows > 0 and files > 0, r.stdout
    assert unsupported == 0, r.stdout
    return units, rows


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_same_rows_as_libdw(tool, tmp_path, build):
    out = build_program(tmp_path, build)
    _, rows = compare(tool, str(out))
    assert rows > 100


def test_same_rows_as_libdw_profd(tool, profd_bin):
    units, rows = compare(tool, profd_bin)
    assert units > 50 and rows > 10000


def test_same_rows_as_libdw_libc_debug_file(tool):
    libc = [l.split()[2] for l in subprocess.run(["ldd", "/bin/true"], capture_output=True,
                                                  text=True).stdout.splitlines()
            if "libc.so" in l][0]
    notes = subprocess.run(["readelf", "-n", libc], capture_output=True, text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    path = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
    if not os.path.exists(path):
        pytest.skip("no libc6-dbg")
    units, rows = compare(tool, path)
    assert units > 1000 and rows > 100000


def test_same_rows_as_libdw_libpython(tool):
    libs = sorted(glob.glob("/root/.pyenv/versions/3.1[0-9]*/lib/libpython3.*.so.1.0"))
    if not libs:
        pytest.skip("no pyenv Python built with -g")
    units, rows = compare(tool, libs[-1])
    assert rows > 100000


@pytest.mark.parametrize("build", ["gcc-dwarf2", "gcc-dwarf5", "clang-dwarf5"])
def test_corrupt_line_programs(tmp_path, build):
    """Hostile input: the program cut at every length and every byte
    replaced (0, 0xff, +1, random), decoded and looked up in by a build
    of the decoder with ASan/UBSan: no crash, no read past the section;
    some decode (a changed line number is still a program), some are
    refused."""
    out = build_program(tmp_path, build)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = str(tmp_path / "test_dwarf_linetab_asan")
    subprocess.run(["gcc", "-O1", "-g", "-std=gnu11", "-D_GNU_SOURCE",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-I" + os.path.join(root, "src"), "-I" + root,
                    "-I" + os.path.join(root, "tests", "unit"), "-o", exe,
                    os.path.join(root, "tests/unit/test_dwarf_linetab.c"),
                    os.path.join(root, "src/symbol/dwarf_linetab.c"), "-ldw", "-lelf"],
                   check=True)
    r = subprocess.run([exe, "--corrupt", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"cases=(\d+) built=(\d+) refused=(\d+)", r.stdout)
    assert m, r.stdout
    cases, built, refused = map(int, m.groups())
    assert cases > 1000 and built > 0 and refused > 0, r.stdout
    # the same binary's intact program still matches libdw
    r = subprocess.run([exe, str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "mismatches=0" in r.stdout, r.stdout + r.stderr
