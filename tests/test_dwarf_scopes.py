"""C++ source lines and inlined frames at every address (issue 18, point
1), against LLVM's llvm-symbolizer as the oracle.

A C++ program built here with -O2 -g has its functions in nested
namespaces and classes, template instances, a lambda, std::map, sort and
to_string inlined into them, and a cold path gcc moves into a separate
`.cold` part (the function's DW_AT_ranges then has two ranges). Each
byte of its executable segment is looked up through profd's DWARF
reader (src/symbol/dwarf_lines.c and dwarf_scopes.c: a unit's functions
found through its function index, then the inlined subroutines inside;
build/tests/unit/test_dwarf_lines FILE VADDR...) and through
`llvm-symbolizer --inlining`: every level of every chain must have the
same file and line, and each inlined level the same function (mangled
names compared demangled, spaces aside: the two demanglers differ
there). The outermost level's name is not compared: llvm-symbolizer
names it from the symbol table (`.isra.0`, `.cold`), profd's symbolizer
does that too, above this reader (tests/test_native_lines.py).

C is checked against addr2line in tests/test_native_lines.py; binutils'
addr2line is no oracle for C++ here (it gives the enclosing function's
name and the unit's file to inlined levels where their DIEs say
otherwise: both LLVM and this reader agree on what the DIEs say).
"""
import os
import shutil
import subprocess

import pytest

from conftest import unit_program
from test_dwarf import elf_symbols
from test_split_dwarf import llvm_symbolizer

SRC = r"""
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace outer {
namespace inner {
struct Counter {
	std::map<std::string, long> m;
	__attribute__((noinline)) void add(const std::string &k, long v) { m[k] += v; }
	long total() const
	{
		long t = 0;
		for (auto &p : m)
			t += p.second;
		return t;
	}
};
template <typename T> __attribute__((noinline)) T scaled(T x, int k)
{
	std::vector<T> v(k, x);
	std::sort(v.begin(), v.end());
	return v[k / 2] * 3;
}
} // namespace inner
__attribute__((cold, noinline)) void fail(const char *why)
{
	fprintf(stderr, "%s\n", why);
	abort();
}
static inline __attribute__((always_inline)) long step(inner::Counter &c, long i)
{
	if (__builtin_expect(i < 0, 0))
		fail("negative");
	c.add(std::to_string(i % 97), i);
	return inner::scaled<long>(i, 9) + inner::scaled<double>(i, 5);
}
} // namespace outer

int main(int argc, char **argv)
{
	outer::inner::Counter c;
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	auto f = [&](long i) { return outer::step(c, i); };
	for (long i = 0; i < n; i++) {
		if (__builtin_expect(i == -5, 0)) {
			fprintf(stderr, "odd %ld\n", i);
			outer::fail("odd");
		}
		s += f(i);
	}
	printf("%ld %ld\n", s, c.total());
	return 0;
}
"""


def exec_addresses(binary):
    """Every address of @binary's executable PT_LOAD segments."""
    out = subprocess.run(["readelf", "-lW", binary], check=True, capture_output=True,
                         text=True).stdout
    addrs = []
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD" and "E" in p[-2]:
            vaddr, memsz = int(p[2], 16), int(p[5], 16)
            addrs += range(vaddr, vaddr + memsz)
    return addrs


def profd_chains(tool, binary, addrs):
    """{addr: [(name, file basename, line), ...]} innermost first, from
    profd's DWARF reader; [] where it has none."""
    res, cur = {}, None
    for i in range(0, len(addrs), 2000):
        out = subprocess.run([tool, binary, *("%x" % a for a in addrs[i:i + 2000])],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            if not line.startswith("  "):
                cur = int(line.split()[0], 16)
                res[cur] = []
                continue
            name, loc = line.strip().rsplit(" ", 1)
            file, _, ln = loc.rpartition(":")
            res[cur].append((name, os.path.basename(file), int(ln)))
    return res


def llvm_chains(binary, addrs):
    """The same from llvm-symbolizer --inlining (names demangled)."""
    res = {}
    for i in range(0, len(addrs), 2000):
        res.update(llvm_symbolizer(binary, addrs[i:i + 2000]))
    return res


def demangled(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def test_cxx_chains_match_llvm_symbolizer(tmp_path):
    if not shutil.which("llvm-symbolizer"):
        pytest.skip("llvm-symbolizer missing: apt-get install llvm (README's test command does)")
    src = tmp_path / "scopes.cc"
    src.write_text(SRC.lstrip("\n"))
    binary = str(tmp_path / "scopes")
    subprocess.run(["g++", "-O2", "-g", "-o", binary, str(src)], check=True)
    tool = unit_program("test_dwarf_lines")

    addrs = exec_addresses(binary)
    mine = profd_chains(tool, binary, addrs)
    looked = [a for a in addrs if mine.get(a)]
    assert len(looked) > 0.5 * len(addrs), (len(looked), len(addrs))
    ref = llvm_chains(binary, looked)

    bad = [(hex(a), mine[a], ref[a]) for a in looked
           if [(f, l) for _, f, l in mine[a]] != [(f, l) for _, f, l in ref[a]]]
    assert not bad, f"{len(bad)} of {len(looked)} differ in file:line:\n" + \
        "\n".join(map(str, bad[:10]))

    inner = {m for a in looked for m, _, _ in mine[a][:-1]}
    dem = demangled(sorted(inner))
    squash = lambda s: s.replace(" ", "")
    bad = [(hex(a), m, r) for a in looked
           for (m, _, _), (r, _, _) in zip(mine[a][:-1], ref[a][:-1])
           if squash(dem[m]) != squash(r) and m != r]
    assert not bad, f"inlined levels named differently:\n" + "\n".join(map(str, bad[:10]))

    # the places the index must get right: a namespace's class member, two
    # template instances, inlined chains three deep, and main's cold part
    syms = {n: (v, v + size) for n, (v, size) in elf_symbols(binary).items()}
    want = {
        "Counter::add": [n for n in syms if "7Counter3add" in n],
        "scaled<long>": [n for n in syms if "6scaledIlE" in n],
        "scaled<double>": [n for n in syms if "6scaledIdE" in n],
        "main.cold": [n for n in syms if n == "main.cold"],
    }
    for what, names in want.items():
        assert names, (what, sorted(syms))
        lo, hi = syms[names[0]]
        inside = [a for a in looked if lo <= a < hi]
        assert inside, (what, names[0])
        if what == "main.cold":     # DWARF's function for the cold part: main
            assert all(mine[a][-1][0] == "main" for a in inside), \
                [(hex(a), mine[a]) for a in inside[:5]]
    deep = [a for a in looked if len(mine[a]) >= 3]
    assert len(deep) > 100, len(deep)
    print(f"{len(looked)} addresses: file:line at every level and inlined names as "
          f"llvm-symbolizer's; {len(deep)} with 3+ levels")
