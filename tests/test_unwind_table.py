"""The unwind-table compiler (src/unwind/compile.c) against readelf.

build/tests/unit/test_unwind_dump builds the table of a file and looks
addresses up in it with unwind_table_find(), the binary search the BPF
unwinder does. The oracle is binutils' `readelf --debug-dump=frames-interp`:
for every row it prints (the row's LOC and the last byte before the next
LOC, or the FDE's end) our lookup must give the same CFA rule and rbp
rule, mapped to what a row can hold:

  CFA  rsp+N / rbp+N   -> the same, when N is a multiple of 8 in
                          0..65535*8, else UNSUPPORTED ("u")
       exp             -> plt1 / plt2 when the FDE's (or CIE's)
                          DW_CFA_def_cfa_expression is one of the two
                          binutils PLT expressions (read from plain
                          `--debug-dump=frames`), else "u"
       other register  -> "u"
       (any)           -> "u" when the return-address column is not c-8
                          (e.g. `u` in _start: outermost frame)
       (any)           -> "sig" when the FDE's CIE has augmentation S
  rbp  absent, u, s    -> "u" (unchanged)
       c-N             -> "c-N" when N is a multiple of 8 within s8*8
       anything else   -> "x" (UNSUPPORTED)

Overlapping FDEs are modelled as compile.c resolves them: by start
address, ties by section (.eh_frame first) and order; an FDE starting
inside the covered range only counts from its end on.

Files: every ELF shared library under /usr/lib/x86_64-linux-gnu (by
inode, so hard links count once), /usr/bin/python3.11, test programs
built here (gcc -O2 -fomit-frame-pointer PIE, -static, -O0, clang, C++
with exceptions, C++ with an IBT PLT, and .debug_frame ones: gcc
-fno-asynchronous-unwind-tables -g (gas writes CIE version 1 whatever
-gdwarf-N says), the same zlib-compressed, clang -fno-unwind-tables -g
(version 4), a Go program (compressed, version 3, data alignment -4)),
a stripped program with its objcopy --only-keep-debug file, and this
machine's vDSO through unwind_table_build_mem(). 64-bit DWARF and
version 3 CIEs, which no toolchain here writes, are in
tests/unit/test_unwind_cfi.c. Run time: two
worker processes; libraries with more than SAMPLE_FDES FDEs (LLVM, ICU,
Mesa) have SAMPLE_FDES of them checked, chosen with a fixed seed (every
FDE with an `exp` row is always checked); the others are checked whole.

Corrupt input: ~300 copies of libc.so.6 with its .eh_frame truncated
(sh_size cut) or with bytes flipped, overwritten or length fields made
absurd, each run under ASan/UBSan with a timeout: no crash, no hang,
errors counted. The libFuzzer target is in tests/fuzz/ (its test runs
it for FUZZ_SECONDS).
"""
import multiprocessing
import multiprocessing.pool
import os
import random
import re
import shutil
import struct
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = os.path.join(ROOT, "build", "tests", "unit")
DUMP = os.path.join(UNIT, "test_unwind_dump")
CFI_UNIT = os.path.join(UNIT, "test_unwind_cfi")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
SAMPLE_FDES = 1500
FUZZ_SECONDS = int(os.environ.get("PROFD_FUZZ_SECONDS", "20"))

# the compiler's sources, built here with sanitizers (corrupt input, fuzzing)
SRC_FILES = ["src/unwind/compile.c", "src/unwind/dwarf_cfi.c", "src/unwind/cfa_interp.c",
             "src/unwind/go.c", "src/unwind/go_cgo.c", "src/util/gopclntab.c",
             "src/util/go_elf.c", "src/util/elf_section.c", "src/util/build_lane.c",
             "src/counters/counters.c"]

PLT_EXPR = {
    "DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; "
    "DW_OP_lit11; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus": "plt1",
    "DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; "
    "DW_OP_lit10; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus": "plt2",
    "DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; "
    "DW_OP_lit9; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus": "plt3",
}

C_PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <alloca.h>

volatile long sink;

__attribute__((noinline)) long leaf(long x) { return x * 3 + sink; }

__attribute__((noinline)) long big_frame(long n)
{
	char buf[70000];	/* CFA offset > 64 KiB: still representable */
	memset(buf, (int)n, sizeof(buf));
	__asm__ volatile("" : : "r"(buf) : "memory");
	return buf[n % sizeof(buf)] + leaf(n);
}

__attribute__((noinline)) long dynamic(long n)
{
	char *p = alloca(n + 16);	/* needs a frame pointer: CFA = rbp+16 */
	memset(p, 1, n + 16);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p[n] + leaf(n);
}

__attribute__((noinline)) long many_regs(long a, long b, long c, long d)
{
	long r = 0;
	for (long i = 0; i < a; i++)
		r += leaf(i * b) ^ leaf(i + c) ^ leaf(d - i) ^ (r >> 3);
	return r;
}

static int cmp(const void *a, const void *b)
{
	return (int)(*(const long *)a - *(const long *)b);
}

int main(int argc, char **argv)
{
	long v[64];
	for (int i = 0; i < 64; i++)
		v[i] = leaf(i ^ argc);
	qsort(v, 64, sizeof(v[0]), cmp);
	printf("%ld\n", big_frame(argc) + dynamic(argc) + many_regs(argc, 2, 3, 4) + v[3]);
	return 0;
}
"""

CXX_PROG = r"""
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

struct Obj { std::string s; ~Obj() { std::puts(s.c_str()); } };

__attribute__((noinline)) int thrower(int x)
{
	Obj o{std::to_string(x)};
	if (x > 2)
		throw std::runtime_error("x");
	return x;
}

int main(int argc, char **)
{
	std::vector<int> v;
	try {
		for (int i = 0; i < argc + 4; i++)
			v.push_back(thrower(i));
	} catch (const std::exception &e) {
		std::puts(e.what());
	}
	return (int)v.size();
}
"""


GO_PROG = """package main

import "fmt"

func main() { fmt.Println("hello") }
"""


@pytest.fixture(scope="session", autouse=True)
def built():
    subprocess.run(["make", "-C", ROOT, "build/tests/unit/test_unwind_dump",
                    "build/tests/unit/test_unwind_cfi"], check=True)
    for b in (DUMP, CFI_UNIT):
        assert os.access(b, os.X_OK), b


# ---- the oracle -----------------------------------------------------------

HDR_RE = re.compile(r"^([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+) (CIE|FDE)(.*)$", re.M)
FDE_RE = re.compile(r"cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)")
CIE_AUG_RE = re.compile(r'^ "([^"]*)"')
# a rule readelf prints: "r3 (rbx)" for DW_CFA_register has a space in it
RULE_RE = re.compile(r"r\d+ \([^)]*\)|\S+")
CFA_RE = re.compile(r"^(rsp|rbp)([+-]\d+)$")
EXPR_RE = re.compile(r"DW_CFA_def_cfa_expression \((.*)\)$", re.M)


def readelf(path, mode):
    p = subprocess.run(["readelf", "--debug-dump=" + mode, "-W", path],
                       capture_output=True)
    return p.stdout.decode("latin-1")


def split_entries(text):
    """(section, offset, header line, block) for every CIE/FDE readelf
    printed, in output order. section: 'eh' or 'debug'."""
    section = None
    out = []
    for block in text.split("\n\n"):
        block = block.strip("\n")
        if not block:
            continue
        if block.startswith("Contents of the "):
            section = "debug" if "debug_frame" in block.split("\n")[0] else "eh"
            continue
        m = HDR_RE.match(block)
        if not m or section is None:
            continue
        out.append((section, int(m.group(1), 16), m, block))
    return out


def parse_rows(block):
    """[(loc, {column: value})] of one entry's interpreted table."""
    cols = None
    rows = []
    for line in block.split("\n")[1:]:
        if line.startswith("   LOC"):
            cols = line.split()[2:]
            continue
        f = RULE_RE.findall(line)
        if cols is None or len(f) < 2:
            continue
        try:
            loc = int(f[0], 16)
        except ValueError:
            continue
        assert len(f) == len(cols) + 2, (line, cols)
        vals = dict(zip(cols, f[2:]))
        vals["CFA"] = f[1]
        rows.append((loc, vals))
    return rows


def expected(vals, signal, exprs):
    """The (cfa, rbp) strings test_unwind_dump must print for a readelf row;
    cfa may be a set of acceptable answers."""
    key = (vals["CFA"], vals.get("rbp"), vals.get("ra"), signal, tuple(exprs))
    if key not in _EXPECTED:
        _EXPECTED[key] = _expected(vals, signal, exprs)
    return _EXPECTED[key]


_EXPECTED = {}


def _expected(vals, signal, exprs):
    if signal:
        return "sig", "u"
    rbp = vals.get("rbp", "u")
    if rbp in ("u", "s"):
        rbp_e = "u"
    else:
        m = re.match(r"^c([+-]\d+)$", rbp)
        n = int(m.group(1)) if m else None
        rbp_e = rbp if n is not None and n % 8 == 0 and -1024 <= n <= 1016 else "x"
    cfa = vals["CFA"]
    if vals.get("ra") == "u":
        return "outer", "u"     # DW_CFA_undefined rip: the outermost frame
    if vals.get("ra") != "c-8":
        return "u", rbp_e
    if cfa == "exp":
        kinds = {PLT_EXPR.get(e, "u") for e in exprs} or {"u"}
        return (kinds.pop() if len(kinds) == 1 else kinds), rbp_e
    m = CFA_RE.match(cfa)
    if m:
        n = int(m.group(2))
        if n % 8 == 0 and 0 <= n <= 65535 * 8:
            return f"{m.group(1)}+{n}", rbp_e
    return "u", rbp_e


def raw_exprs(path):
    """{(section, entry offset): [DW_CFA_def_cfa_expression text]} from
    plain --debug-dump=frames (found by regex, not by splitting: the
    plain dump of a big library is 100+ MB)."""
    text = readelf(path, "frames")
    sections = []
    pos = text.find("Contents of the ")
    while pos >= 0:
        kind = "debug" if text.startswith("debug_frame", pos + 17) else "eh"
        sections.append((pos, kind))
        pos = text.find("Contents of the ", pos + 1)
    out = {}
    for m in EXPR_RE.finditer(text):
        start = text.rfind("\n\n", 0, m.start()) + 2
        h = HDR_RE.match(text, start)
        sec = [k for p, k in sections if p < m.start()]
        if h and sec:
            out.setdefault((sec[-1], int(h.group(1), 16)), []).append(m.group(1))
    return out


def check_file(args):
    """Compare one file. Returns a dict: path, result, rows (checked),
    fdes, sampled, bad (mismatch lines), stats (ours)."""
    path, extra, sample = args
    res = {"path": path, "rows": 0, "fdes": 0, "sampled": False, "bad": [],
           "stats": {}, "result": None, "unsupported_why": {}}
    entries = split_entries(readelf(path, "frames-interp"))
    cies = {}
    fdes = []
    for sec, off, m, block in entries:
        if m.group(4) == "CIE":
            a = CIE_AUG_RE.search(m.group(5))
            cies[(sec, off)] = a.group(1) if a else ""
            continue
        f = FDE_RE.search(m.group(5))
        if not f:
            continue
        start, end = int(f.group(2), 16), int(f.group(3), 16)
        if end > start:
            fdes.append((start, 0 if sec == "eh" else 1, len(fdes), end, sec,
                         off, int(f.group(1), 16), block))
    res["fdes"] = len(fdes)
    if not fdes:
        p = subprocess.run([DUMP, "--stats", *extra, path], capture_output=True, text=True)
        res["result"] = _result(p.stdout)
        res["stats"] = _stats(p.stdout)
        return res

    chosen = range(len(fdes))
    if sample and len(fdes) > sample:
        rnd = random.Random(path)
        must = [i for i, f in enumerate(fdes) if "exp" in f[7]]
        chosen = set(rnd.sample(range(len(fdes)), sample)) | set(must)
        res["sampled"] = True
    chosen = set(chosen)

    # which FDEs are "exp"-bearing and need the expression text
    exprs = raw_exprs(path) if any("exp" in fdes[i][7] for i in chosen) else {}

    queries = []    # (vaddr, expected cfa, expected rbp, context)
    covered = None
    for idx in sorted(range(len(fdes)), key=lambda i: fdes[i][:3]):
        start, _prio, _n, end, sec, off, cie_off, block = fdes[idx]
        eff = start if covered is None else max(start, covered)
        covered = end if covered is None else max(covered, end)
        if idx not in chosen or eff >= end:
            continue
        aug = cies.get((sec, cie_off), "")
        signal = "S" in aug
        ex = exprs.get((sec, off), []) + exprs.get((sec, cie_off), [])
        rows = parse_rows(block)
        for i, (loc, vals) in enumerate(rows):
            nxt = rows[i + 1][0] if i + 1 < len(rows) else end
            lo, hi = max(loc, eff), min(nxt, end)
            if lo >= hi:
                continue
            cfa_e, rbp_e = expected(vals, signal, ex)
            ctx = (sec, off, start, end, loc)
            queries.append((lo, cfa_e, rbp_e, ctx, vals))
            if hi - 1 != lo:
                queries.append((hi - 1, cfa_e, rbp_e, ctx, vals))
    p = subprocess.run([DUMP, "--lookup", *extra, path, "-"],
                       input="".join(f"{q[0]:x}\n" for q in queries),
                       capture_output=True, text=True)
    res["result"] = _result(p.stdout)
    res["stats"] = _stats(p.stdout)
    got = [l.split() for l in p.stdout.splitlines() if not l.startswith("#")]
    if len(got) != len(queries):
        res["bad"].append(f"{len(got)} answers for {len(queries)} queries "
                          f"(rc {p.returncode}: {p.stderr[-300:]})")
        return res
    go = None       # a Go binary? asked at its first GO_ROWS answer
    for q, g in zip(queries, got):
        cfa_e, rbp_e = q[1], q[2]
        cfa_g = g[1]
        rbp_g = g[2] if len(g) > 2 else None
        if cfa_g in GO_ROWS and go is None:
            go = is_go(path)
        if go and cfa_g in GO_ROWS:
            continue    # src/unwind/go.c's own rows: tests/test_go_unwind.py
        ok_cfa = cfa_g in cfa_e if isinstance(cfa_e, set) else cfa_g == cfa_e
        if not ok_cfa or rbp_g != rbp_e:
            sec, off, start, end, loc = q[3]
            res["bad"].append(f"{q[0]:x}: got {g[1:]} want {cfa_e} {rbp_e} "
                              f"({sec}@{off:x} [{start:x},{end:x}) row {loc:x} {q[4]})")
        elif cfa_g == "u" or rbp_g == "x":
            why = _why(q[4], cfa_g)
            res["unsupported_why"][why] = res["unsupported_why"].get(why, 0) + 1
    res["rows"] = len(queries)
    return res


def _why(vals, cfa_got):
    """Why readelf's row became UNSUPPORTED, for the summary."""
    if cfa_got != "u":
        return "rbp " + re.sub(r"\d+", "N", vals.get("rbp", "?"))
    if vals.get("ra") != "c-8":
        return f"ra {vals.get('ra')}"
    if vals["CFA"] == "exp":
        return "cfa exp"
    m = CFA_RE.match(vals["CFA"])
    if not m:
        return "cfa " + re.sub(r"[+-]\d+$", "+N", vals["CFA"])
    if int(m.group(2)) % 8:
        return "cfa offset not 8-aligned"
    return "cfa offset out of range"


def _stats(out):
    for line in out.splitlines():
        if line.startswith("# stats "):
            return dict(kv.split("=") for kv in line[8:].split())
    return {}


def _result(out):
    for line in out.splitlines():
        if line.startswith("# result "):
            return int(line.split()[2])
    return None


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def system_libraries():
    seen = set()
    out = []
    for dirpath, _dirs, files in os.walk(LIBDIR):
        for name in sorted(files):
            if ".so" not in name:
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen or not os.path.isfile(path) or not is_elf(path):
                continue
            seen.add(key)
            out.append((st.st_size, path))
    # biggest first, so the pool's tail is short
    return [p for _s, p in sorted(out, reverse=True)]


def run_checks(jobs):
    with multiprocessing.Pool(min(2, os.cpu_count() or 1)) as pool:
        return pool.map(check_file, jobs, chunksize=1)


def report(results, allow_errors=()):
    bad = []
    rows = sum(r["rows"] for r in results)
    why = {}
    for r in results:
        for k, v in r["unsupported_why"].items():
            why[k] = why.get(k, 0) + v
        for b in r["bad"][:5]:
            bad.append(f"{r['path']}: {b}")
        if r["fdes"] and r["result"] != 0:
            bad.append(f"{r['path']}: result {r['result']} with {r['fdes']} FDEs")
        errs = int(r["stats"].get("errors", 0))
        if errs and r["path"] not in allow_errors:
            bad.append(f"{r['path']}: {errs} errors: {r['stats']}")
    unsup = sorted(((int(r["stats"].get("rows_unsupported", 0)), r["path"])
                    for r in results if r["stats"]), reverse=True)
    print(f"{len(results)} files, {rows} lookups checked, "
          f"{sum(r['sampled'] for r in results)} sampled")
    print("unsupported (checked rows, by readelf's rule):", why)
    print("most unsupported rows:", unsup[:10])
    return bad


# ---- tests ----------------------------------------------------------------

def test_cfi_unit():
    p = subprocess.run([CFI_UNIT], capture_output=True, text=True)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASSED" in p.stdout


def test_all_system_libraries():
    libs = system_libraries()
    assert len(libs) > 100
    results = run_checks([(p, (), SAMPLE_FDES) for p in libs])
    bad = report(results)
    assert not bad, "\n".join(bad[:40])
    assert sum(r["rows"] for r in results) > 100000


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("unwind_progs")
    c = d / "prog.c"
    c.write_text(C_PROG)
    cxx = d / "prog.cc"
    cxx.write_text(CXX_PROG)
    out = {}
    builds = {
        "o2_nofp": ["gcc", "-O2", "-fomit-frame-pointer", "-o", "{o}", str(c)],
        "o2_nofp_static": ["gcc", "-O2", "-fomit-frame-pointer", "-static", "-o", "{o}", str(c)],
        "o0_fp": ["gcc", "-O0", "-fno-omit-frame-pointer", "-o", "{o}", str(c)],
        "clang_o2": ["clang", "-O2", "-fomit-frame-pointer", "-o", "{o}", str(c)],
        "cxx_o2": ["g++", "-O2", "-fomit-frame-pointer", "-o", "{o}", str(cxx)],
        "cxx_cet": ["g++", "-O2", "-fcf-protection=full", "-Wl,-z,ibtplt",
                    "-o", "{o}", str(cxx)],
        "debug_frame_dwarf5": ["gcc", "-O2", "-g", "-fno-asynchronous-unwind-tables",
                               "-o", "{o}", str(c)],
        "debug_frame_dwarf4": ["gcc", "-O2", "-gdwarf-4", "-fno-asynchronous-unwind-tables",
                               "-o", "{o}", str(c)],
        "debug_frame_dwarf2": ["gcc", "-O2", "-gdwarf-2", "-fno-asynchronous-unwind-tables",
                               "-o", "{o}", str(c)],
        "debug_frame_zlib": ["gcc", "-O2", "-g", "-fno-asynchronous-unwind-tables",
                             "-Wl,--compress-debug-sections=zlib", "-o", "{o}", str(c)],
        "debug_frame_clang": ["clang", "-O2", "-g", "-fno-unwind-tables",
                              "-fno-asynchronous-unwind-tables", "-o", "{o}", str(c)],
    }
    for name, cmd in builds.items():
        o = str(d / name)
        subprocess.run([a.replace("{o}", o) for a in cmd], check=True)
        out[name] = o
    if shutil.which("go"):
        # Go writes a zlib-compressed .debug_frame, CIE version 3, data
        # alignment -4, and no .eh_frame at all
        (d / "main.go").write_text(GO_PROG)
        env = dict(os.environ, GO111MODULE="off", GOFLAGS="", CGO_ENABLED="0")
        subprocess.run(["go", "build", "-o", str(d / "go_hello"), str(d / "main.go")],
                       check=True, env=env, cwd=str(d))
        out["go_hello"] = str(d / "go_hello")
    return out


DEBUG_FRAME = ("debug_frame_dwarf5", "debug_frame_dwarf4", "debug_frame_dwarf2",
               "debug_frame_zlib", "debug_frame_clang")


def test_programs(progs):
    jobs = [(p, (), None) for p in progs.values()]
    jobs.append(("/usr/bin/python3.11", (), None))
    results = run_checks(jobs)
    bad = report(results)
    assert not bad, "\n".join(bad[:40])
    by = {r["path"]: r for r in results}
    for name in DEBUG_FRAME:
        r = by[progs[name]]
        # the program's own functions come from .debug_frame
        assert r["rows"] > 10, (name, r)
        assert int(r["stats"]["sections"]) >= 2, (name, r["stats"])
    # the big frame (70000 bytes) and the alloca frame are representable
    table = subprocess.run([DUMP, progs["o2_nofp"]], capture_output=True,
                           text=True, check=True).stdout
    assert re.search(r" rsp\+700[0-9][0-9] ", table), table[:2000]
    assert " rbp+16 c-16" in table
    assert " plt1 " in table
    # binutils 2.40's IBT lazy PLT uses DW_OP_lit9 (endbr64; push; jmp):
    # PLT3 (PLT1 is lit11, PLT2 lit10, the older IBT+BND layout); the
    # oracle run above checked that row by row.
    raw = readelf(progs["cxx_cet"], "frames")
    plt = readelf_sections(progs["cxx_cet"])[".plt"][0]
    got = subprocess.run([DUMP, "--lookup", progs["cxx_cet"], f"{plt + 16:x}"],
                         capture_output=True, text=True, check=True).stdout.split()
    if "DW_OP_lit9;" in raw:
        assert got[1] == "plt3", got
    elif "DW_OP_lit10;" in raw:
        assert got[1] == "plt2", got


# Rows src/unwind/go.c writes over a Go binary's CFI (stack switches,
# Go's sigreturn, TOPFRAME functions): checked by tests/test_go_unwind.py.
GO_ROWS = {"go-systemstack", "go-mcall", "go-morestack", "go-vdso", "go-asmcgocall",
           "go-cgocallback", "sig", "outer"}


def is_go(path):
    """Has @path a Go pclntab?"""
    return ".gopclntab" in readelf_sections(path)


def readelf_sections(path):
    """{name: (addr, offset, size)} from readelf -SW."""
    out = {}
    text = subprocess.run(["readelf", "-SW", path], capture_output=True,
                          text=True, check=True).stdout
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", text):
        out[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16))
    return out


def test_stripped_debug_file(progs, tmp_path):
    """.debug_frame in a separate debug file: unwind_table_build_fds()."""
    src = progs["debug_frame_dwarf5"]
    dbg = str(tmp_path / "prog.debug")
    stripped = str(tmp_path / "prog.stripped")
    subprocess.run(["objcopy", "--only-keep-debug", src, dbg], check=True)
    subprocess.run(["objcopy", "--strip-debug", src, stripped], check=True)
    alone = _stats(subprocess.run([DUMP, "--stats", stripped], capture_output=True,
                                  text=True).stdout)
    both = subprocess.run([DUMP, "--debug", dbg, stripped], capture_output=True,
                          text=True).stdout
    full = subprocess.run([DUMP, src], capture_output=True, text=True).stdout
    assert int(alone["fdes"]) < int(_stats(full)["fdes"])
    strip = lambda t: [l for l in t.splitlines() if not l.startswith("#")]
    assert strip(both) == strip(full)


def test_vdso_from_memory(tmp_path):
    """The vDSO image read from /proc/self/mem, through build_mem."""
    with open("/proc/self/maps") as f:
        m = [l for l in f if l.rstrip().endswith("[vdso]")]
    if not m:
        pytest.skip("no vDSO mapped")
    lo, hi = (int(x, 16) for x in m[0].split()[0].split("-"))
    with open("/proc/self/mem", "rb") as f:
        f.seek(lo)
        img = f.read(hi - lo)
    path = str(tmp_path / "vdso.so")
    with open(path, "wb") as f:
        f.write(img)
    r = check_file((path, ("--mem",), None))
    assert r["result"] == 0, r
    assert not r["bad"], r["bad"][:20]
    assert r["rows"] > 0


def test_lookup_edges():
    lib = os.path.join(LIBDIR, "libc.so.6")
    table = subprocess.run([DUMP, lib], capture_output=True, text=True, check=True).stdout
    rows = [l.split() for l in table.splitlines() if not l.startswith("#")]
    base = int(rows[0][0], 16)
    last = int(rows[-1][0], 16)
    assert rows[-1][1] == "end"
    gaps = [int(r[0], 16) for r in rows if r[1] == "end"]
    q = [base - 1, base, last, last + 1, 0, 2**64 - 1] + gaps[:50]
    out = subprocess.run([DUMP, "--lookup", lib] + [f"{a:x}" for a in q],
                         capture_output=True, text=True, check=True).stdout
    got = [l.split() for l in out.splitlines() if not l.startswith("#")]
    assert got[0][1] == "-" and got[1][1] != "-"
    assert got[2][1] == "-" and got[3][1] == "-"
    assert got[4][1] == "-" and got[5][1] == "-"
    assert all(g[1] == "-" for g in got[6:])
    # sorted, strictly increasing pcs, no two equal neighbours
    pcs = [int(r[0], 16) for r in rows]
    assert pcs == sorted(set(pcs))
    assert all(rows[i][1:] != rows[i + 1][1:] for i in range(len(rows) - 1))


@pytest.mark.parametrize("path", [os.path.join(LIBDIR, "libz.so.1"), "/usr/bin/python3.11"])
def test_no_section_headers(path, tmp_path):
    """Without section headers .eh_frame is found through PT_GNU_EH_FRAME
    and code ranges come from PF_X segments: the same table."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    struct.pack_into("<Q", data, 0x28, 0)            # e_shoff
    struct.pack_into("<HHH", data, 0x3a, 0, 0, 0)    # e_shentsize, e_shnum, e_shstrndx
    copy = tmp_path / "noshdr"
    copy.write_bytes(bytes(data))
    rows = lambda p: [l for l in subprocess.run([DUMP, p], capture_output=True, text=True,
                                                 check=True).stdout.splitlines()
                      if not l.startswith("#")]
    want = rows(path)
    assert len(want) > 100
    assert rows(str(copy)) == want


def test_not_elf_and_no_cfi(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"hello world" * 100)
    p = subprocess.run([DUMP, "--stats", str(junk)], capture_output=True, text=True)
    assert p.returncode == 2 and _result(p.stdout) == -8     # -ENOEXEC
    obj = tmp_path / "nocfi"
    subprocess.run(["objcopy", "--remove-section=.eh_frame",
                    "--remove-section=.eh_frame_hdr", "/usr/bin/true", str(obj)],
                   check=True)
    p = subprocess.run([DUMP, "--stats", str(obj)], capture_output=True, text=True)
    assert p.returncode == 2 and _result(p.stdout) == -61    # -ENODATA


# ---- corrupt input ----------------------------------------------------------

def build_asan(tmp):
    exe = os.path.join(tmp, "dump_asan")
    subprocess.run(["gcc", "-O1", "-g", "-std=gnu11", "-D_GNU_SOURCE",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-I" + os.path.join(ROOT, "src"), "-I" + ROOT, "-o", exe,
                    os.path.join(ROOT, "tests/unit/test_unwind_dump.c"),
                    *[os.path.join(ROOT, s) for s in SRC_FILES], "-ldw", "-lelf", "-lz"],
                   check=True)
    return exe


def eh_frame_shdr_field(path):
    """File offset of .eh_frame's sh_size field, and the section's (offset, size)."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        h = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, h)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".eh_frame":
            off, size = struct.unpack_from("<QQ", data, h + 0x18)
            return h + 0x20, off, size
    raise AssertionError("no .eh_frame")


def mutate(data, rnd, kind, size_field, off, size):
    buf = bytearray(data)
    if kind == "cut":           # sh_size cut: entries truncated mid-way
        struct.pack_into("<Q", buf, size_field, rnd.randrange(1, size))
    elif kind == "flip":        # a few random bit flips
        for _ in range(rnd.randint(1, 8)):
            buf[off + rnd.randrange(size)] ^= 1 << rnd.randrange(8)
    elif kind == "bytes":       # random bytes over a run
        at = off + rnd.randrange(size)
        for i in range(rnd.randint(1, 64)):
            if at + i < off + size:
                buf[at + i] = rnd.randrange(256)
    elif kind == "length":      # an entry length made absurd
        pos = off
        n = rnd.randrange(50)
        for _ in range(n):
            ln, = struct.unpack_from("<I", buf, pos)
            if ln in (0, 0xffffffff) or pos + 4 + ln >= off + size:
                break
            pos += 4 + ln
        struct.pack_into("<I", buf, pos, rnd.choice(
            [0xffffffff, 0xfffffff0, 1, 3, 5, size, rnd.randrange(1 << 32)]))
    elif kind == "zero":        # zeros over a run
        at = off + rnd.randrange(size)
        for i in range(rnd.randint(1, 256)):
            if at + i < off + size:
                buf[at + i] = 0
    return bytes(buf)


def run_one(args):
    exe, path = args
    try:
        p = subprocess.run([exe, "--stats", path], capture_output=True, text=True,
                           timeout=20)
    except subprocess.TimeoutExpired:
        return path, "timeout", {}
    return path, p.returncode, _stats(p.stdout) if p.returncode in (0, 2) else p.stderr[-2000:]


def test_corrupt_eh_frame(tmp_path):
    exe = build_asan(str(tmp_path))
    lib = os.path.join(LIBDIR, "libc.so.6")
    with open(lib, "rb") as f:
        data = f.read()
    size_field, off, size = eh_frame_shdr_field(lib)
    full = int(_stats(subprocess.run([DUMP, "--stats", lib], capture_output=True,
                                     text=True).stdout)["fdes"])
    rnd = random.Random(1234)
    kinds = ["cut"] * 60 + ["flip"] * 100 + ["bytes"] * 60 + ["length"] * 50 + ["zero"] * 30
    jobs = []
    for i, kind in enumerate(kinds):
        p = str(tmp_path / f"v{i:03d}_{kind}.so")
        with open(p, "wb") as f:
            f.write(mutate(data, rnd, kind, size_field, off, size))
        jobs.append((exe, p))
    with multiprocessing.pool.ThreadPool(2) as pool:
        results = pool.map(run_one, jobs)
    crashes = [(p, rc, st) for p, rc, st in results if rc not in (0, 2)]
    assert not crashes, crashes[:5]
    errors = sum(int(st.get("errors", 0)) for _p, _rc, st in results)
    with_err = sum(1 for _p, _rc, st in results if int(st.get("errors", 0)))
    kinds_seen = {}
    for _p, _rc, st in results:
        for k in ("truncated", "bad_cie", "bad_pointer", "bad_opcode",
                  "bad_advance", "bad_range", "state_stack"):
            kinds_seen[k] = kinds_seen.get(k, 0) + int(st.get(k, 0))
    kept = sorted(int(st.get("fdes", 0)) for _p, _rc, st in results)
    print(f"{len(results)} variants, {with_err} with errors, {errors} errors: "
          f"{kinds_seen}; FDEs kept: median {kept[len(kept) // 2]} of {full}")
    assert with_err > len(results) // 2
    # a corrupt entry costs that entry (or, when its length is corrupt, the
    # entries after it: nothing says where the next one starts), not the table
    assert sum(1 for _p, rc, _st in results if rc == 0) > 0.9 * len(results)
    assert kept[len(kept) // 2] > full // 2


# ---- fuzzing ----------------------------------------------------------------

def test_fuzz(tmp_path):
    clang = shutil.which("clang")
    if not clang:
        pytest.fail("clang missing")
    exe = str(tmp_path / "fuzz_unwind")
    p = subprocess.run([clang, "-g", "-O1", "-fsanitize=fuzzer,address,undefined",
                        "-fno-sanitize-recover=all", "-I" + os.path.join(ROOT, "src"),
                        "-I" + ROOT, "-o", exe,
                        os.path.join(ROOT, "tests/fuzz/fuzz_unwind.c"),
                        *[os.path.join(ROOT, s) for s in SRC_FILES], "-ldw", "-lelf", "-lz"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    seed_corpus(str(corpus), str(tmp_path))
    p = subprocess.run([exe, f"-max_total_time={FUZZ_SECONDS}", "-timeout=10",
                        "-rss_limit_mb=2048", "-max_len=65536", "-print_final_stats=1",
                        f"-artifact_prefix={tmp_path}/", str(corpus)],
                       capture_output=True, text=True, timeout=FUZZ_SECONDS + 120)
    tail = p.stderr[-4000:]
    print(tail)
    assert p.returncode == 0, tail
    assert "ERROR:" not in p.stderr and "runtime error" not in p.stderr, tail
    assert not [f for f in os.listdir(tmp_path) if f.startswith(("crash-", "timeout-", "oom-", "leak-"))]


def extract_section(path, name, out):
    subprocess.run(["objcopy", "--dump-section", f"{name}={out}", path, out + ".elf"],
                   check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


def seed_corpus(corpus, tmp):
    """Seeds: the fuzz target's first byte picks the entry point (see
    fuzz_unwind.c): 'E' ELF image, 'e' .eh_frame, 'd' .debug_frame."""
    n = 0

    def put(prefix, blob):
        nonlocal n
        with open(os.path.join(corpus, f"seed{n:02d}"), "wb") as f:
            f.write(prefix + blob[:60000])
        n += 1

    prog = os.path.join(tmp, "small")
    subprocess.run(["gcc", "-O2", "-o", prog, "-x", "c", "-"],
                   input="int main(void){return 0;}", text=True, check=True)
    with open(prog, "rb") as f:
        put(b"E", f.read())
    for lib in ("libz.so.1", "libc.so.6", "libstdc++.so.6"):
        path = os.path.join(LIBDIR, lib)
        addr = readelf_sections(path)[".eh_frame"][0]
        blob = extract_section(path, ".eh_frame", os.path.join(tmp, lib + ".eh"))
        put(b"e" + struct.pack("<Q", addr), blob[:8000])
    dbg = os.path.join(tmp, "dbg")
    subprocess.run(["gcc", "-O2", "-g", "-fno-asynchronous-unwind-tables", "-o", dbg,
                    "-x", "c", "-"], input=C_PROG, text=True, check=True)
    put(b"d" + struct.pack("<Q", 0), extract_section(dbg, ".debug_frame",
                                                     os.path.join(tmp, "df")))
