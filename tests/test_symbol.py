"""Symbolization against independent oracles.

build/tests/unit/test_symbolize (our proc maps parser, ELF reader,
demangler, symbolizer and kallsyms reader behind a small CLI) is compared
with binutils: `readelf -s` for symbol addresses, sizes and bindings,
`readelf -n` for build IDs, `c++filt` for demangled names. Test programs
are compiled here with gcc/g++, as PIE and as non-PIE, stripped and not.
Live processes are resolved through /proc/PID/map_files, also after their
binary is deleted, and through /proc/PID/root when map_files is denied.
Corrupt ELF files (truncated, byte-flipped) must never crash the reader.

Separate debug files (libc6-dbg's /usr/lib/debug/.build-id/..., and
.gnu_debuglink files made here with objcopy) are checked against readelf
of the debug file itself; the vDSO against readelf of a copy dumped from
/proc/PID/mem; kallsyms bounds against the _etext/_einittext markers.
"""
import bisect
import os
import random
import re
import shutil
import signal
import subprocess
import zlib

import pytest

from conftest import mount_ns_argv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = os.path.join(ROOT, "build", "tests", "unit")
TEST_MAPS = os.path.join(UNIT, "test_maps")
TEST_SYM = os.path.join(UNIT, "test_symbolize")

C_SRC = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

#define WORK(n) for (int i = 0; i < (n); i++) sink += i * x;

__attribute__((noinline)) int demo_alpha(int x) { WORK(3) return sink; }
__attribute__((noinline)) static int demo_beta_static(int x)
{
	WORK(5) return sink + 1;
}
__attribute__((noinline, weak)) int demo_weak(int x) { WORK(7) return sink + 2; }
int demo_alias(int x) __attribute__((alias("demo_alpha")));
__attribute__((noinline)) int demo_gamma(int x)
{
	return demo_beta_static(x) + demo_weak(x);
}

/* A function without a .size: it must cover up to the next symbol. */
__asm__(".text\n.globl demo_nosize\n.type demo_nosize,@function\n"
	".p2align 4\ndemo_nosize:\n nop\n nop\n nop\n nop\n nop\n ret\n"
	".p2align 4\n");
int demo_nosize(void);

static int impl_a(int x) { return x + 1; }
static int (*resolve_ifunc(void))(int) { return impl_a; }
int demo_ifunc(int) __attribute__((ifunc("resolve_ifunc")));

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--serve")) {
		printf("demo_alpha %p\n", (void *)demo_alpha);
		printf("demo_beta_static %p\n", (void *)demo_beta_static);
		printf("demo_gamma %p\n", (void *)demo_gamma);
		printf("demo_nosize %p\n", (void *)demo_nosize);
		printf("main %p\n", (void *)main);
		printf("getpid %p\n", dlsym(RTLD_DEFAULT, "getpid"));
		printf("ready\n");
		fflush(stdout);
		sleep(600);
		return 0;
	}
	return demo_gamma(argc) + demo_alpha(argc) + demo_nosize() +
	       demo_ifunc(argc);
}
"""

CXX_SRC = r"""
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace ns {
template <typename T> __attribute__((noinline)) T twice(T v)
{
	volatile T s = v;
	return s + s;
}
struct Widget {
	int n;
	__attribute__((noinline)) int poke(int x);
};
int Widget::poke(int x)
{
	n += x;
	return n;
}
}
template int ns::twice<int>(int);
template double ns::twice<double>(double);

int main(int argc, char **argv)
{
	ns::Widget w{0};

	if (argc > 1 && !strcmp(argv[1], "--serve")) {
		std::printf("twice_int %p\n", (void *)&ns::twice<int>);
		std::printf("ready\n");
		std::fflush(stdout);
		sleep(600);
	}
	return w.poke(argc) + ns::twice<int>(argc) + (int)ns::twice<double>(argc);
}
"""

LIB_SRC = r"""
volatile int lib_sink;

__attribute__((noinline)) int lib_exported_one(int x)
{
	for (int i = 0; i < 9; i++)
		lib_sink += i * x;
	return lib_sink;
}
__attribute__((noinline)) static int lib_hidden_static(int x)
{
	for (int i = 0; i < 4; i++)
		lib_sink ^= i + x;
	return lib_sink;
}
__attribute__((noinline)) int lib_exported_two(int x)
{
	return lib_hidden_static(x) * 3 + lib_exported_one(x);
}
__attribute__((weak)) int lib_weak(int x) { return x * lib_sink; }
"""

RANK = {"GLOBAL": 2, "UNIQUE": 2, "WEAK": 1}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          **kw).stdout


@pytest.fixture(scope="session", autouse=True)
def built():
    subprocess.run(["make", "-C", ROOT, "build/tests/unit/test_maps",
                    "build/tests/unit/test_symbolize"], check=True)
    for b in (TEST_MAPS, TEST_SYM):
        assert os.access(b, os.X_OK), b


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    """The test programs, keyed by flavour; each a path in a tmp dir."""
    d = tmp_path_factory.mktemp("progs")
    (d / "demo.c").write_text(C_SRC)
    (d / "demo.cc").write_text(CXX_SRC)
    (d / "lib.c").write_text(LIB_SRC)
    out = {}

    def build(name, compiler, src, *flags):
        path = str(d / name)
        subprocess.run([compiler, "-O2", "-g", *flags, "-o", path,
                        str(d / src)], check=True)
        out[name] = path

    build("c_pie", "gcc", "demo.c", "-fPIE", "-pie")
    build("c_nopie", "gcc", "demo.c", "-fno-pie", "-no-pie")
    build("cxx_pie", "g++", "demo.cc", "-fPIE", "-pie")
    build("cxx_nopie", "g++", "demo.cc", "-fno-pie", "-no-pie")
    build("c_pie_rdynamic", "gcc", "demo.c", "-fPIE", "-pie", "-rdynamic")
    build("libdemo.so", "gcc", "lib.c", "-fPIC", "-shared")
    for name in ("libdemo.so", "c_pie_rdynamic"):
        stripped = str(d / (name + ".stripped"))
        subprocess.run(["strip", "--strip-all", "-o", stripped, out[name]],
                       check=True)
        out[name + ".stripped"] = stripped
    return out


class Sym:
    def __init__(self, value, size, bind, name, symtab):
        self.value, self.size, self.bind = value, size, bind
        self.name, self.symtab = name, symtab


def readelf_funcs(path):
    """Defined FUNC/IFUNC symbols of .symtab and .dynsym, per readelf."""
    syms, table = [], None
    for line in run(["readelf", "-sW", path]).splitlines():
        m = re.match(r"Symbol table '(\S+)'", line)
        if m:
            table = m.group(1)
            continue
        parts = line.split()
        if len(parts) < 8 or not re.fullmatch(r"\d+:", parts[0]):
            continue
        _, value, size, typ, bind, _, ndx = parts[:7]
        if typ not in ("FUNC", "IFUNC") or ndx == "UND":
            continue
        value = int(value, 16)
        if value == 0:
            continue
        syms.append(Sym(value, int(size, 0), bind, parts[7].split("@")[0],
                        table == ".symtab"))
    return syms


def cxxfilt(names):
    """c++filt's reading of each _Z name; other names as they are. -i
    (no verbose) is the convention __cxa_demangle follows: "std::string",
    not "std::basic_string<char, ...>", for the standard abbreviations."""
    mangled = sorted({n for n in names if n.startswith("_Z")})
    out = {n: n for n in names}
    if mangled:
        res = run(["c++filt", "-i"], input="\n".join(mangled) + "\n").splitlines()
        assert len(res) == len(mangled)
        out.update(zip(mangled, res))
    return out


def readelf_build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]))
    return m.group(1) if m else ""


def symbolize(path, addrs, check=True):
    """Run test_symbolize on an ELF file: (build_id, {addr: (name, start)})."""
    p = subprocess.run([TEST_SYM, path] + [hex(a) for a in addrs],
                       capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines and lines[0].startswith("build-id"), p.stdout
    return lines[0][len("build-id "):].strip(), parse_results(lines[1:])


def parse_results(lines):
    res = {}
    for line in lines:
        addr, rest = line.split(" ", 1)
        if rest.startswith("?"):
            res[int(addr, 16)] = None
        else:
            name, start = rest.rsplit(" ", 1)
            res[int(addr, 16)] = (name, int(start, 16))
    return res


class Oracle:
    """What a correct lookup returns, derived from readelf only: of @path,
    plus the .symtab of each of @extra (its separate debug files)."""

    def __init__(self, path, extra=()):
        self.syms = readelf_funcs(path)
        for e in extra:
            self.syms += [s for s in readelf_funcs(e) if s.symtab]
        self.by_addr = {}
        for s in self.syms:
            self.by_addr.setdefault(s.value, []).append(s)
        self.starts = sorted(self.by_addr)
        self.demangled = cxxfilt({s.name for s in self.syms})

    def names_at(self, addr):
        group = self.by_addr[addr]
        best = max(RANK.get(s.bind, 0) for s in group)
        return {self.demangled[s.name] for s in group
                if RANK.get(s.bind, 0) == best}

    def size_at(self, addr):
        return max(s.size for s in self.by_addr[addr])

    def queries(self, sample=None, seed=1):
        """{vaddr: expected (names, start) or None} for symbol starts,
        unambiguous insides and the first byte past sized symbols."""
        starts = self.starts
        if sample is not None and len(starts) > sample:
            starts = sorted(random.Random(seed).sample(starts, sample))
        want = {}
        ends = [(a, a + self.size_at(a)) for a in self.starts
                if self.size_at(a)]
        for a in starts:
            want[a] = (self.names_at(a), a)
            size = self.size_at(a)
            if not size:
                continue
            nxt = self._next_start(a)
            for inside in (a + size // 2, a + size - 1):
                if inside > a and (nxt is None or inside < nxt):
                    want[inside] = (self.names_at(a), a)
            end = a + size
            if (nxt is None or end < nxt) and \
                    not any(s <= end < e for s, e in ends):
                want[end] = None
        return want

    def _next_start(self, a):
        i = bisect.bisect_right(self.starts, a)
        return self.starts[i] if i < len(self.starts) else None


def check_against_oracle(path, sample=None, extra=()):
    oracle = Oracle(path, extra)
    want = oracle.queries(sample)
    assert want, f"{path}: no function symbols per readelf"
    build_id, got = symbolize(path, sorted(want))
    bad = []
    for addr, exp in sorted(want.items()):
        g = got.get(addr)
        if exp is None:
            if g is not None:
                bad.append(f"{addr:#x}: want no symbol, got {g}")
        elif g is None or g[1] != exp[1] or g[0] not in exp[0]:
            bad.append(f"{addr:#x}: want {sorted(exp[0])} @ {exp[1]:#x}, "
                       f"got {g}")
    assert not bad, f"{path}: {len(bad)}/{len(want)} mismatches:\n" + \
        "\n".join(bad[:30])
    assert build_id == readelf_build_id(path)
    return oracle, got


def test_maps_unit():
    p = subprocess.run([TEST_MAPS], capture_output=True, text=True)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASSED" in p.stdout


@pytest.mark.parametrize("flavour", ["c_pie", "c_nopie", "cxx_pie",
                                     "cxx_nopie", "libdemo.so"])
def test_symbols_match_readelf(progs, flavour):
    oracle, got = check_against_oracle(progs[flavour])
    names = {n for names, _ in
             (v for v in oracle.queries().values() if v) for n in names}
    if flavour.startswith("c_"):
        assert {"demo_alpha", "demo_gamma", "demo_beta_static", "main",
                "demo_nosize", "demo_ifunc"} <= names
        # demo_alias shares demo_alpha's address: GLOBAL both, either name.
        a = next(s.value for s in oracle.syms if s.name == "demo_alpha")
        assert got[a][0] in ("demo_alpha", "demo_alias")


def test_elf_type(progs):
    for name, want in (("c_pie", "DYN"), ("c_nopie", "EXEC")):
        assert want in run(["readelf", "-hW", progs[name]])


def test_size_zero_symbol_extends_to_next(progs):
    for flavour in ("c_pie", "c_nopie"):
        oracle = Oracle(progs[flavour])
        (s,) = [s for s in oracle.syms if s.name == "demo_nosize"]
        assert s.size == 0
        nxt = oracle._next_start(s.value)
        probes = [s.value, s.value + 3, s.value + 5]
        if nxt:
            probes.append(nxt - 1)
        _, got = symbolize(progs[flavour], probes)
        for p in probes:
            assert got[p] == ("demo_nosize", s.value), (flavour, hex(p))


def test_cxx_demangled_like_cxxfilt(progs):
    for flavour in ("cxx_pie", "cxx_nopie"):
        oracle = Oracle(progs[flavour])
        want = {}
        for s in oracle.syms:
            if s.name.startswith("_ZN2ns"):
                want[s.value] = oracle.demangled[s.name]
        assert "int ns::twice<int>(int)" in want.values()
        assert "double ns::twice<double>(double)" in want.values()
        assert "ns::Widget::poke(int)" in want.values()
        _, got = symbolize(progs[flavour], list(want))
        for addr, name in want.items():
            assert got[addr] == (name, addr)


# Rust symbols as rustc writes them (v0: "_R..."; legacy: "_ZN...17h<hash>E"),
# taken from real binaries: generics, closures, an LLVM suffix.
RUST_NAMES = [
    "_RNvCs6ygKICNz7jq_17bash_tool_backend4main",
    "_RINvNtNtCsalM65ksrrJu_3std3sys9backtrace28___rust_begin_short_backtrace"
    "FEuuECs6ygKICNz7jq_17bash_tool_backend",
    "_RNCINvNtCsalM65ksrrJu_3std2rt10lang_startuE0Cs6ygKICNz7jq_17bash_tool_backend"
    ".llvm.4149057722433849006",
    "_ZN3std2rt10lang_start17h0123456789abcdefE",
    "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
    "closure$u7d$$u7d$$GT$17h5d3c5e9bd5e4b3a1E",
]


def rust_oracle(names):
    """c++filt's reading of each Rust name, without the crate
    disambiguators ([hex]) and hashes (::h<16 hex>) it prints but perf,
    pprof and rustc's own backtraces leave out, and the .llvm. suffix."""
    out = run(["c++filt"], input="\n".join(names) + "\n").splitlines()
    assert len(out) == len(names)
    clean = []
    for o in out:
        o = re.sub(r"\[[0-9a-f]+\]", "", o)
        o = re.sub(r"::h[0-9a-f]{16}$", "", o)
        clean.append(re.sub(r"\.llvm\.\d+$", "", o))
    return dict(zip(names, clean))


def test_rust_demangled_like_cxxfilt(tmp_path):
    """Functions named as rustc names them (asm labels in a C program:
    real ELF symbols, no Rust toolchain needed) are named as c++filt
    reads them, less the hashes Rust's own tools hide."""
    src = tmp_path / "rust_names.c"
    body = "volatile int sink;\n"
    for i, n in enumerate(RUST_NAMES):
        body += (f'__attribute__((noinline, used)) void f{i}(void) __asm__("{n}");\n'
                 f"void f{i}(void) {{ for (int k = 0; k < {i + 3}; k++) sink += k; }}\n")
    body += "int main(void) { " + " ".join(f"f{i}();" for i in range(len(RUST_NAMES))) + " }\n"
    src.write_text(body)
    exe = str(tmp_path / "rust_names")
    subprocess.run(["gcc", "-O1", "-o", exe, str(src)], check=True)
    want = rust_oracle(RUST_NAMES)
    assert want[RUST_NAMES[0]] == "bash_tool_backend::main", want
    addrs = {}
    for line in run(["readelf", "-sW", exe]).splitlines():
        f = line.split()
        if len(f) == 8 and f[7] in want and f[3] == "FUNC":
            addrs[int(f[1], 16)] = want[f[7]]
    assert len(addrs) == len(RUST_NAMES), addrs
    _, got = symbolize(exe, list(addrs))
    for addr, name in addrs.items():
        assert got[addr] == (name, addr), (hex(addr), got[addr], name)


def test_stripped_uses_dynsym(progs):
    for name, exported, hidden in (
            ("libdemo.so", ["lib_exported_one", "lib_exported_two",
                            "lib_weak"], "lib_hidden_static"),
            ("c_pie_rdynamic", ["demo_alpha", "demo_gamma", "main"],
             "demo_beta_static")):
        full = Oracle(progs[name])
        stripped = progs[name + ".stripped"]
        assert ".symtab" not in run(["readelf", "-SW", stripped])
        check_against_oracle(stripped)
        addrs = {s.name: s.value for s in full.syms}
        probes = [addrs[n] for n in exported] + [addrs[n] + 1
                                                  for n in exported]
        _, got = symbolize(stripped, probes + [addrs[hidden]])
        for n in exported:
            assert got[addrs[n]][0] in (n, "demo_alias")
            assert got[addrs[n] + 1][1] == addrs[n]
        # Only .dynsym is left: the static function has no name of its own.
        g = got[addrs[hidden]]
        assert g is None or g[0] != hidden


def _system_lib(name):
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
              "/lib64", "/usr/lib64", "/lib", "/usr/lib"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return os.path.realpath(p)
    return None


def build_id_debug_path(path):
    """Where a build-ID-indexed debug file for @path would be, per readelf."""
    bid = readelf_build_id(path)
    return f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" if bid \
        else None


def symtab_of(path):
    return ".symtab" in run(["readelf", "-SW", path])


@pytest.mark.parametrize("lib", ["libc.so.6", "libstdc++.so.6", "libz.so.1"])
def test_system_library_sample(lib):
    path = _system_lib(lib)
    if not path:
        pytest.skip(f"{lib} not installed")
    # Installed debug files are used: the oracle includes their .symtab.
    dbg = build_id_debug_path(path)
    extra = [dbg] if dbg and os.path.exists(dbg) and not symtab_of(path) \
        else []
    check_against_oracle(path, sample=300, extra=extra)


def _serve(path, argv=None):
    """Start a test program in --serve mode (or @argv, a command that
    starts it so): (process, {name: address})."""
    p = subprocess.Popen(argv or [path, "--serve"], stdout=subprocess.PIPE, text=True)
    addrs = {}
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "ready":
                break
            name, addr = line.split()
            addrs[name] = int(addr, 16)
        assert addrs, "test program printed nothing"
    except BaseException:
        _stop(p)
        raise
    return p, addrs


def assert_static_named(progs, pid, runtime):
    """demo_beta_static, a local symbol only the debug file has, is named at
    its runtime address in process @pid (and one byte in), as the
    unstripped c_pie's symbol table says."""
    full = Oracle(progs["c_pie"])
    beta = next(s.value for s in full.syms if s.name == "demo_beta_static")
    a = runtime["demo_beta_static"]
    got = symbolize_pid(pid, [a, a + 1])
    assert got[a] == ("demo_beta_static", beta), got
    assert got[a + 1] == ("demo_beta_static", beta), got


def _stop(p):
    p.kill()
    p.wait()


def symbolize_pid(pid, addrs, prefix=()):
    p = subprocess.run(list(prefix) + [TEST_SYM, "--pid", str(pid)] +
                       [hex(a) for a in addrs],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = {}
    for line in p.stdout.splitlines():
        addr, rest = line.split(" ", 1)
        if rest.startswith("?"):
            out[int(addr, 16)] = rest
        else:
            name, start = rest.rsplit(" ", 1)
            out[int(addr, 16)] = (name, int(start, 16))
    return out


def _check_live(pid, runtime, oracle, libc_names):
    probes = []
    for name, addr in runtime.items():
        probes += [addr, addr + 1]
    got = symbolize_pid(pid, probes)
    for name, addr in runtime.items():
        for a in (addr, addr + 1):
            g = got[a]
            assert isinstance(g, tuple), (name, hex(a), g)
            if name == "getpid":
                assert g[0] in libc_names, g
            else:
                want = next(s.value for s in oracle.syms if s.name == name)
                assert g[1] == want, (name, hex(g[1]), hex(want))
                assert g[0] in oracle.names_at(want), (name, g)
    return got


def _libc_names_for(pid, addr):
    """Names readelf gives for the libc symbol at runtime address addr."""
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if lo <= addr < hi:
            path = f[5]
            break
    else:
        raise AssertionError("getpid not mapped")
    return {s.name for s in readelf_funcs(path)
            if s.name in ("getpid", "__getpid")} or {"getpid"}


@pytest.mark.parametrize("flavour", ["c_pie", "c_nopie"])
def test_live_process_and_deleted_binary(progs, tmp_path, flavour):
    path = str(tmp_path / "victim")
    shutil.copy(progs[flavour], path)
    oracle = Oracle(path)
    p, runtime = _serve(path)
    try:
        libc_names = _libc_names_for(p.pid, runtime["getpid"])
        _check_live(p.pid, runtime, oracle, libc_names)
        os.unlink(path)
        maps = open(f"/proc/{p.pid}/maps").read()
        assert f"{path} (deleted)" in maps
        _check_live(p.pid, runtime, oracle, libc_names)
    finally:
        _stop(p)


def test_live_cxx(progs):
    oracle = Oracle(progs["cxx_pie"])
    p, runtime = _serve(progs["cxx_pie"])
    try:
        want = next(s.value for s in oracle.syms
                    if oracle.demangled[s.name] == "int ns::twice<int>(int)")
        a = runtime["twice_int"] + 2
        got = symbolize_pid(p.pid, [a])
        assert got[a] == ("int ns::twice<int>(int)", want)
    finally:
        _stop(p)


def test_symbolize_gone_process():
    p = subprocess.Popen(["true"])
    p.wait()
    r = subprocess.run([TEST_SYM, "--pid", str(p.pid), "0x1000"],
                       capture_output=True, text=True)
    assert r.returncode == 1


def _can_drop_caps():
    return os.geteuid() == 0 and shutil.which("setpriv")


NO_MAP_FILES = ["setpriv", "--bounding-set=-sys_admin,-checkpoint_restore"]


@pytest.mark.skipif(not _can_drop_caps(), reason="needs root and setpriv")
def test_fallback_to_proc_root_path(progs, tmp_path):
    """Without CAP_SYS_ADMIN, map_files is denied: the path under
    /proc/PID/root is used, but only while it is still the same inode."""
    path = str(tmp_path / "victim")
    shutil.copy(progs["c_pie"], path)
    oracle = Oracle(path)
    p, runtime = _serve(path)
    try:
        a = runtime["demo_gamma"]
        pid = p.pid
        mf = os.listdir(f"/proc/{pid}/map_files")[0]
        r = subprocess.run(NO_MAP_FILES + ["cat", f"/proc/{pid}/map_files/{mf}"],
                           capture_output=True)
        if r.returncode == 0:
            pytest.skip("map_files still readable without CAP_SYS_ADMIN")
        got = symbolize_pid(pid, [a], NO_MAP_FILES)
        assert got[a] == ("demo_gamma", [s.value for s in oracle.syms
                                         if s.name == "demo_gamma"][0])
        # Replace the file with a different one at the same path.
        os.unlink(path)
        shutil.copy(progs["libdemo.so"], path)
        got = symbolize_pid(pid, [a], NO_MAP_FILES)
        assert isinstance(got[a], str) and "Stale" in got[a], got
        # map_files (full caps) still finds the original, deleted file.
        got = symbolize_pid(pid, [a])
        assert got[a][0] == "demo_gamma"
    finally:
        _stop(p)


def _corrupt_runs(original, tmp_path, variants, addrs):
    data = open(original, "rb").read()
    victim = str(tmp_path / "corrupt.so")
    crashes, codes = [], {}
    for label, blob in variants(data):
        with open(victim, "wb") as f:
            f.write(blob)
        try:
            p = subprocess.run([TEST_SYM, victim] + [hex(a) for a in addrs],
                               capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            crashes.append(f"{label}: hung")
            continue
        codes[p.returncode] = codes.get(p.returncode, 0) + 1
        if p.returncode < 0:
            keep = str(tmp_path / f"crash-{len(crashes)}.so")
            shutil.copy(victim, keep)
            crashes.append(f"{label}: {signal.Signals(-p.returncode).name}"
                           f" (kept {keep})")
    return crashes, codes


def _flips(data, seed, n):
    """n variants, each with 1..16 random bytes changed; half of them in
    the parts libelf reads (ELF/program headers, section headers, symbol
    and string tables), half anywhere."""
    rng = random.Random(seed)
    size = len(data)
    shoff = int.from_bytes(data[0x28:0x30], "little")
    hot = [(0, min(size, 0x40 + 56 * 16))]
    if shoff < size:
        hot.append((shoff, size))
    for i in range(n):
        b = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            if i % 2 == 0:
                lo, hi = rng.choice(hot)
                pos = rng.randrange(lo, hi)
            else:
                pos = rng.randrange(size)
            b[pos] = rng.randrange(256)
        yield f"seed {seed} variant {i}", bytes(b)


def _truncations(data, seed):
    rng = random.Random(seed)
    size = len(data)
    cuts = {0, 1, 4, 16, 52, 63, 64, 65, 100, 0x40 + 56, 0x200, 0x1000,
            size // 2, size - 1}
    cuts |= {rng.randrange(size) for _ in range(30)}
    for c in sorted(cuts):
        if c < size:
            yield f"truncated to {c}", data[:c]


@pytest.mark.parametrize("which", ["libdemo.so", "libz.so.1"])
def test_corrupt_elf_never_crashes(progs, tmp_path, which):
    original = progs.get(which) or _system_lib(which)
    if not original:
        pytest.skip(f"{which} not installed")
    syms = readelf_funcs(original)
    rng = random.Random(7)
    addrs = [s.value for s in rng.sample(syms, min(10, len(syms)))]
    addrs += [0, 1, 0x1000, 2**64 - 1] + [rng.randrange(2**20)
                                           for _ in range(6)]

    def variants(data):
        yield from _truncations(data, 3)
        yield from _flips(data, 11, 200)
        # Header fields replaced with extreme values.
        for off, width in ((0x20, 8), (0x28, 8), (0x36, 2), (0x38, 2),
                           (0x3a, 2), (0x3c, 2), (0x3e, 2)):
            for val in (0, 1, 2**(8 * width) - 1, 2**(8 * width - 1)):
                b = bytearray(data)
                b[off:off + width] = val.to_bytes(width, "little")
                yield f"header {off:#x} = {val:#x}", bytes(b)

    crashes, codes = _corrupt_runs(original, tmp_path, variants, addrs)
    print("exit codes:", codes)
    assert not crashes, "\n".join(crashes)
    # The untouched file still works after all that.
    check_against_oracle(original, sample=100)


def _kallsyms():
    out = []
    with open("/proc/kallsyms") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            mod = parts[3].strip("[]") if len(parts) > 3 else ""
            out.append((int(parts[0], 16), parts[1], parts[2], mod))
    return out


def symbolize_kallsyms(addrs, path=None):
    cmd = [TEST_SYM, "--kallsyms"] + (["--file", path] if path else [])
    p = subprocess.run(cmd + [hex(a) for a in addrs], capture_output=True,
                       text=True, timeout=60)
    lines = p.stdout.splitlines()
    if p.returncode:
        return p.returncode, lines, {}
    res = {}
    for line in lines[1:]:
        f = line.split()
        res[int(f[0], 16)] = None if f[1] == "?" else \
            (f[1], int(f[2], 16), "" if f[3] == "-" else f[3])
    return 0, lines, res


def test_kallsyms_known_symbol():
    syms = _kallsyms()
    if all(a == 0 for a, *_ in syms):
        rc, lines, _ = symbolize_kallsyms([0])
        assert rc == 1 and lines == ["error -1"]    # -EPERM
        pytest.skip("kptr_restrict hides kernel addresses")
    text = [s for s in syms if s[1] in "tTwW"]
    by_addr = {}
    for a, _, name, mod in text:
        by_addr.setdefault(a, []).append((name, mod))
    known = None
    for want in ("schedule", "do_sys_openat2", "vfs_read"):
        known = next((s for s in text if s[2] == want and not s[3]), None)
        if known:
            break
    assert known, "no well-known kernel function in /proc/kallsyms"
    addr = known[0]
    rc, lines, got = symbolize_kallsyms([addr, addr + 1, addr + 4])
    assert rc == 0
    # BPF programs loaded or unloaded meanwhile (other tools on the machine)
    # add or drop [bpf] text symbols: the tool's count lies between the
    # file's before and after its read
    after = sum(1 for s in _kallsyms() if s[1] in "tTwW")
    assert min(len(text), after) <= int(lines[0].split()[1]) <= max(len(text), after)
    for a in (addr, addr + 1, addr + 4):
        name, start, mod = got[a]
        assert start == addr and mod == ""
        assert name in {n for n, _ in by_addr[addr]}
    assert got[addr][0] == by_addr[addr][0][0]   # first in file order


def test_kallsyms_module_symbol():
    try:
        modules = open("/proc/modules").read().strip()
    except OSError:
        modules = ""
    if not modules:
        pytest.skip("no kernel modules loaded")
    syms = _kallsyms()
    if all(a == 0 for a, *_ in syms):
        pytest.skip("kptr_restrict hides kernel addresses")
    text = [s for s in syms if s[1] in "tTwW"]
    mod_syms = [s for s in text if s[3] and s[3] in
                {line.split()[0] for line in modules.splitlines()}]
    if not mod_syms:
        pytest.skip("no module text symbols")
    addr, _, name, mod = mod_syms[len(mod_syms) // 2]
    rc, _, got = symbolize_kallsyms([addr])
    assert rc == 0
    assert got[addr][1] == addr
    assert got[addr][2] == mod
    same = {(n, m) for a, _, n, m in text if a == addr}
    assert (got[addr][0], got[addr][2]) in same


FAKE_KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81000100 t helper_one
ffffffff81000200 D some_data
ffffffff81000300 W weak_fn
ffffffff81000400 b some_bss
ffffffff81000500 T last_text
ffffffffc0002000 t mod_b_fn\t[mod_b]
ffffffffc0001000 t mod_a_fn\t[mod_a]
ffffffffc0001080 T mod_a_other\t[mod_a]
"""


def test_kallsyms_synthetic(tmp_path):
    path = str(tmp_path / "kallsyms")
    open(path, "w").write(FAKE_KALLSYMS)
    probes = {
        0xffffffff80ffffff: None,
        0xffffffff81000000: ("_stext", 0xffffffff81000000, ""),
        0xffffffff81000250: ("helper_one", 0xffffffff81000100, ""),
        0xffffffff81000301: ("weak_fn", 0xffffffff81000300, ""),
        0xffffffff81000450: ("weak_fn", 0xffffffff81000300, ""),
        0xffffffffc0001004: ("mod_a_fn", 0xffffffffc0001000, "mod_a"),
        0xffffffffc0001090: ("mod_a_other", 0xffffffffc0001080, "mod_a"),
        0xffffffffc0002010: ("mod_b_fn", 0xffffffffc0002000, "mod_b"),
    }
    rc, lines, got = symbolize_kallsyms(list(probes), path)
    assert rc == 0 and lines[0].split()[1] == "7"
    assert got == probes

    zero = re.sub(r"^[0-9a-f]{16}", "0" * 16, FAKE_KALLSYMS, flags=re.M)
    open(path, "w").write(zero)
    rc, lines, _ = symbolize_kallsyms([0], path)
    assert rc == 1 and lines == ["error -1"]    # -EPERM


def kallsyms_range(name, path=None):
    """kallsyms_range() of NAME: (start, end), or None."""
    cmd = [TEST_SYM, "--kallsyms"] + (["--file", path] if path else [])
    p = subprocess.run(cmd + ["--range", name], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    f = p.stdout.splitlines()[1].split()
    assert f[:2] == ["range", name]
    return None if f[2] == "?" else (int(f[2], 16), int(f[3], 16))


def test_kallsyms_range_synthetic(tmp_path):
    # the function's text runs to the next symbol of vmlinux (a data symbol
    # is not kept: helper_one runs to weak_fn), 64 KiB past the last one;
    # module symbols and unknown names have none
    path = str(tmp_path / "kallsyms")
    open(path, "w").write(FAKE_KALLSYMS + "ffffffff81000300 t weak_alias\n")
    assert kallsyms_range("_stext", path) == (0xffffffff81000000, 0xffffffff81000100)
    assert kallsyms_range("helper_one", path) == (0xffffffff81000100, 0xffffffff81000300)
    assert kallsyms_range("weak_alias", path) == (0xffffffff81000300, 0xffffffff81000500)
    assert kallsyms_range("last_text", path) == (0xffffffff81000500,
                                                 0xffffffff81000500 + 65536)
    assert kallsyms_range("mod_a_fn", path) is None
    assert kallsyms_range("no_such_fn", path) is None


def test_kallsyms_range_schedule():
    # __schedule (where off-CPU stacks start): its address in the file to
    # the next higher text address of vmlinux
    syms = _kallsyms()
    if all(a == 0 for a, *_ in syms):
        pytest.skip("kptr_restrict hides kernel addresses")
    text = sorted(a for a, t, _, mod in syms if t in "tTwW" and not mod)
    start = next(a for a, t, n, mod in syms if n == "__schedule" and not mod)
    end = min(a for a in text if a > start)
    assert kallsyms_range("__schedule") == (start, end)


# --- separate debug files -------------------------------------------------

def symbolize_full(path, addrs, *flags):
    """test_symbolize on an ELF file: (build_id, {addr: result}, stderr)."""
    p = subprocess.run([TEST_SYM, *flags, path] + [hex(a) for a in addrs],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines and lines[0].startswith("build-id"), p.stdout
    return lines[0].split()[1] if len(lines[0].split()) > 1 else "", \
        parse_results(lines[1:]), p.stderr


def debug_used(stderr):
    m = re.search(r"^debug (\S+)$", stderr, re.M)
    assert m, stderr
    return None if m.group(1) == "-" else m.group(1)


def _libc_with_debug():
    path = _system_lib("libc.so.6")
    if not path:
        pytest.skip("libc.so.6 not found")
    if symtab_of(path):
        pytest.skip("this libc has its own .symtab")
    dbg = build_id_debug_path(path)
    if not dbg or not os.path.exists(dbg):
        pytest.skip("no debug file for libc (libc6-dbg) installed")
    assert readelf_build_id(dbg) == readelf_build_id(path)
    return path, dbg


def _debug_only_statics(path, dbg):
    """{vaddr: Sym}: sized LOCAL functions of the debug file's .symtab at
    addresses where the object's own .dynsym has no function."""
    dyn = {s.value for s in readelf_funcs(path)}
    out = {}
    for s in readelf_funcs(dbg):
        if s.symtab and s.bind == "LOCAL" and s.size and s.value not in dyn:
            out.setdefault(s.value, s)
    return out


def _static_probes(oracle, statics, n, seed):
    """{probe vaddr: symbol start} for a sample of @statics (always with
    __libc_start_call_main): start, middle and last byte, where no other
    symbol starts in between."""
    pick = sorted(random.Random(seed).sample(sorted(statics),
                                             min(n, len(statics))))
    pick += [a for a, s in statics.items()
             if s.name == "__libc_start_call_main"]
    probes = {}
    for a in pick:
        nxt = oracle._next_start(a)
        size = statics[a].size
        for p in (a, a + size // 2, a + size - 1):
            if nxt is None or p < nxt:
                probes[p] = a
    return probes


def test_debug_file_libc_statics():
    """Static functions of Debian's stripped libc come from libc6-dbg's
    /usr/lib/debug/.build-id file, per readelf of that file."""
    path, dbg = _libc_with_debug()
    oracle = Oracle(path, [dbg])
    statics = _debug_only_statics(path, dbg)
    names = {s.name for s in statics.values()}
    assert "__libc_start_call_main" in names
    probes = _static_probes(oracle, statics, 60, 5)
    bid, got, err = symbolize_full(path, sorted(probes))
    assert debug_used(err) == dbg
    assert bid == readelf_build_id(path)
    bad = [f"{p:#x}: want {sorted(oracle.names_at(a))} @ {a:#x}, got "
           f"{got.get(p)}" for p, a in sorted(probes.items())
           if got.get(p) is None or got[p][1] != a or
           got[p][0] not in oracle.names_at(a)]
    assert not bad, "\n".join(bad[:20])
    # Without the debug file these names are nowhere.
    _, bare, err = symbolize_full(path, sorted(set(probes.values())),
                                  "--no-debug")
    assert debug_used(err) is None
    for a in set(probes.values()):
        assert bare[a] is None or bare[a][0] != statics[a].name, hex(a)


def _load_bias(pid, path):
    """Runtime address minus ELF vaddr for @path mapped in @pid, from
    /proc/PID/maps and readelf -l (the PT_LOAD at file offset 0)."""
    v0 = None
    for line in run(["readelf", "-lW", path]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and int(f[1], 16) == 0:
            v0 = int(f[2], 16)
            break
    assert v0 is not None, path
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) >= 6 and int(f[2], 16) == 0 and \
                os.path.realpath(f[5]) == os.path.realpath(path):
            return int(f[0].split("-")[0], 16) - v0
    raise AssertionError(f"{path} not mapped in {pid}")


def test_debug_file_libc_statics_live(progs):
    """The same through a live process (--pid): the symbolizer looks for
    libc's debug file under /proc/PID/root, then on the host."""
    path, dbg = _libc_with_debug()
    oracle = Oracle(path, [dbg])
    statics = _debug_only_statics(path, dbg)
    probes = _static_probes(oracle, statics, 30, 9)
    p, _ = _serve(progs["c_pie"])
    try:
        bias = _load_bias(p.pid, path)
        got = symbolize_pid(p.pid, [bias + v for v in probes])
    finally:
        _stop(p)
    for v, a in probes.items():
        g = got[bias + v]
        assert isinstance(g, tuple) and g[1] == a and \
            g[0] in oracle.names_at(a), (hex(v), sorted(oracle.names_at(a)),
                                         g)


def _debuglink_crc(path):
    """The CRC stored in @path's .gnu_debuglink, per readelf -x."""
    raw = b""
    for line in run(["readelf", "-x", ".gnu_debuglink", path]).splitlines():
        m = re.match(r"\s+0x[0-9a-f]+ ((?:[0-9a-f]{2,8} ){1,4})", line)
        if m:
            raw += bytes.fromhex(m.group(1).replace(" ", ""))
    name = raw.split(b"\0", 1)[0]
    off = (len(name) + 4) & ~3
    return name.decode(), int.from_bytes(raw[off:off + 4], "little")


def _make_debuglinked(src, tmp_path, debug_src=None):
    """Strip @src into tmp_path/app/demo with a .gnu_debuglink to
    "demo.debug", made (objcopy --only-keep-debug) from @debug_src or
    @src. Returns (stripped path, staged debug file)."""
    app, stage = tmp_path / "app", tmp_path / "stage"
    app.mkdir(exist_ok=True)
    stage.mkdir(exist_ok=True)
    dbg = stage / "demo.debug"
    run(["objcopy", "--only-keep-debug", debug_src or src, str(dbg)])
    exe = app / "demo"
    run(["strip", "--strip-all", "-o", str(exe), src])
    run(["objcopy", f"--add-gnu-debuglink={dbg}", str(exe)])
    assert not symtab_of(str(exe))
    name, crc = _debuglink_crc(str(exe))
    assert name == "demo.debug"
    assert crc == zlib.crc32(dbg.read_bytes())
    return exe, dbg


def _place(dbg, dest_dir):
    """Copy @dbg into @dest_dir, creating it; returns (path, top dir
    created or None) for the caller to remove."""
    top = None
    d = dest_dir
    while not os.path.exists(d):
        top = d
        d = os.path.dirname(d)
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, "demo.debug")
    shutil.copy(dbg, dest)
    return dest, top


@pytest.mark.parametrize("where", ["same-dir", ".debug", "usr-lib-debug"])
def test_debuglink_places(progs, tmp_path, where):
    exe, dbg = _make_debuglinked(progs["c_pie"], tmp_path)
    app = str(exe.parent)
    dest_dir = {"same-dir": app, ".debug": os.path.join(app, ".debug"),
                "usr-lib-debug": "/usr/lib/debug" + app}[where]
    dest, top = _place(dbg, dest_dir)
    try:
        _, _, err = symbolize_full(str(exe), [])
        assert debug_used(err) == dest
        check_against_oracle(str(exe), extra=[dest])
        full = Oracle(progs["c_pie"])
        beta = next(s.value for s in full.syms
                    if s.name == "demo_beta_static")
        _, got, _ = symbolize_full(str(exe), [beta, beta + 1])
        assert got[beta] == ("demo_beta_static", beta)
        assert got[beta + 1] == ("demo_beta_static", beta)
    finally:
        if where == "usr-lib-debug":
            shutil.rmtree(top or dest_dir)


def test_debuglink_crc_mismatch_rejected(progs, tmp_path):
    """Same build ID, CRC off (bytes appended after the link was made):
    not used; the original bytes again: used."""
    exe, dbg = _make_debuglinked(progs["c_pie"], tmp_path)
    dest, _ = _place(dbg, str(exe.parent))
    full = Oracle(progs["c_pie"])
    beta = next(s.value for s in full.syms if s.name == "demo_beta_static")
    good = open(dest, "rb").read()
    with open(dest, "ab") as f:
        f.write(b"\0" * 16)
    assert readelf_build_id(dest) == readelf_build_id(str(exe))
    _, got, err = symbolize_full(str(exe), [beta])
    assert debug_used(err) is None
    assert got[beta] is None or got[beta][0] != "demo_beta_static"
    open(dest, "wb").write(good)
    _, got, err = symbolize_full(str(exe), [beta])
    assert debug_used(err) == dest
    assert got[beta] == ("demo_beta_static", beta)


def test_debuglink_build_id_mismatch_rejected(progs, tmp_path):
    """A debug file whose CRC matches the link but whose build ID is
    another build's (same source at -O1) is not used."""
    src = tmp_path / "demo.c"
    src.write_text(C_SRC)
    other = str(tmp_path / "demo_o1")
    run(["gcc", "-O1", "-g", "-fPIE", "-pie", "-o", other, str(src)])
    exe, dbg = _make_debuglinked(progs["c_pie"], tmp_path, debug_src=other)
    assert readelf_build_id(str(dbg)) != readelf_build_id(str(exe))
    dest, _ = _place(dbg, str(exe.parent))
    full = Oracle(progs["c_pie"])
    beta = next(s.value for s in full.syms if s.name == "demo_beta_static")
    _, got, err = symbolize_full(str(exe), [beta])
    assert debug_used(err) is None
    assert got[beta] is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root and unshare")
def test_debuglink_in_process_mount_namespace(progs, scratch_mount):
    """The debug file exists only in the process's mount namespace (a
    tmpfs over APP/.debug, APP on scratch_mount): found through
    /proc/PID/root, not on the host."""
    exe, dbg = _make_debuglinked(progs["c_pie"], scratch_mount)
    dotdebug = exe.parent / ".debug"
    dotdebug.mkdir()
    script = (f"mount -t tmpfs profd-test {dotdebug} && "
              f"cp {dbg} {dotdebug}/ && exec {exe} --serve")
    p = subprocess.Popen(mount_ns_argv(script), stdout=subprocess.PIPE,
                         text=True)
    runtime = {}
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "ready":
                break
            name, addr = line.split()
            runtime[name] = int(addr, 16)
        if "demo_beta_static" not in runtime:
            pytest.skip("could not mount in a new mount namespace")
        dbg.unlink()
        assert not os.listdir(dotdebug)     # the host sees nothing
        _, _, err = symbolize_full(str(exe), [])
        assert debug_used(err) is None
        assert_static_named(progs, p.pid, runtime)
    finally:
        _stop(p)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root and unshare")
def test_debuglink_of_a_chrooted_process_in_its_mount_namespace(progs, scratch_mount):
    """As test_debuglink_in_process_mount_namespace, the process chrooted
    too (ROOT/app/demo runs as /app/demo; /usr bound in): /proc/PID/maps
    writes its paths from the namespace's root (ROOT/app/demo), its root
    is ROOT, and the debug file is found as /app/.debug/demo.debug there."""
    root = scratch_mount / "root"
    (root / "app").mkdir(parents=True)
    exe, dbg = _make_debuglinked(progs["c_pie"], scratch_mount)
    os.rename(exe, root / "app" / "demo")
    exe = root / "app" / "demo"
    dotdebug = root / "app" / ".debug"
    dotdebug.mkdir()
    system = ""
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            os.symlink(os.readlink(top), root / top[1:])
        elif os.path.isdir(top):
            (root / top[1:]).mkdir()
            system += f"mount --bind {top} {root}{top} && "
    script = (f"{system}mount -t tmpfs profd-test {dotdebug} && "
              f"cp {dbg} {dotdebug}/ && exec chroot {root} /app/demo --serve")
    p, runtime = _serve(None, mount_ns_argv(script))
    try:
        assert "demo_beta_static" in runtime, "the chrooted demo did not start"
        dbg.unlink()
        assert not os.listdir(dotdebug)     # the host sees nothing
        assert os.readlink(f"/proc/{p.pid}/root").endswith(str(root))
        assert_static_named(progs, p.pid, runtime)
    finally:
        _stop(p)


# --- vDSO -----------------------------------------------------------------

VDSO_SRC = r"""
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	printf("ready\n");
	fflush(stdout);
	for (;;)
		clock_gettime(CLOCK_MONOTONIC, &ts);
}
"""


def _vdso_range(pid):
    for line in open(f"/proc/{pid}/maps"):
        if line.rstrip().endswith("[vdso]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            return lo, hi
    return None


def test_vdso_symbols_live(tmp_path):
    """Addresses in a process's [vdso] resolve like readelf says for a
    copy of that vDSO read from /proc/PID/mem."""
    src = tmp_path / "clock.c"
    src.write_text(VDSO_SRC)
    exe = str(tmp_path / "clock")
    run(["gcc", "-O2", "-o", exe, str(src)])
    p = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        rng = _vdso_range(p.pid)
        if not rng:
            pytest.skip("no [vdso] mapping")
        lo, hi = rng
        with open(f"/proc/{p.pid}/mem", "rb") as f:
            f.seek(lo)
            image = f.read(hi - lo)
        dump = str(tmp_path / "vdso.so")
        open(dump, "wb").write(image)
        oracle = Oracle(dump)
        by_name = {s.name: s.value for s in oracle.syms}
        assert "clock_gettime" in by_name or \
            "__vdso_clock_gettime" in by_name, sorted(by_name)
        bias = lo - next(
            int(f[2], 16) for f in (l.split() for l in
                                    run(["readelf", "-lW", dump]).splitlines())
            if f and f[0] == "LOAD" and int(f[1], 16) == 0)
        want = oracle.queries()
        cg = by_name.get("__vdso_clock_gettime", by_name.get("clock_gettime"))
        got = symbolize_pid(p.pid, [bias + v for v in want] +
                            [bias + cg + 1])
    finally:
        _stop(p)
    bad = []
    for v, exp in sorted(want.items()):
        g = got[bias + v]
        if exp is None:
            if isinstance(g, tuple):
                bad.append(f"{v:#x}: want no symbol, got {g}")
        elif not isinstance(g, tuple) or g[1] != exp[1] or \
                g[0] not in exp[0]:
            bad.append(f"{v:#x}: want {sorted(exp[0])} @ {exp[1]:#x}, "
                       f"got {g}")
    assert not bad, "\n".join(bad)
    g = got[bias + cg + 1]
    assert g[0] in ("__vdso_clock_gettime", "clock_gettime") and g[1] == cg
    # The dumped copy read as a file agrees too (build ID included).
    check_against_oracle(dump)


# --- a cached object whose inode now holds another file -------------------

class Session:
    """test_symbolize --session: one symbolizer across requests."""

    def __init__(self, prefix=()):
        self.p = subprocess.Popen(list(prefix) + [TEST_SYM, "--session"],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def ask(self, pid, addrs):
        self.p.stdin.write(f"{pid} " + " ".join(hex(a) for a in addrs) +
                           "\n")
        self.p.stdin.flush()
        out = {}
        for line in self.p.stdout:
            line = line.strip()
            if line == "end":
                return out
            addr, rest = line.split(" ", 1)
            if rest.startswith("?"):
                out[int(addr, 16)] = rest
            else:
                name, start = rest.rsplit(" ", 1)
                out[int(addr, 16)] = (name, int(start, 16))
        raise AssertionError("test_symbolize --session died")

    def memory(self):
        """Bytes the symbolizer holds, as of a trim done now."""
        for cmd in ("trim", "memory"):
            self.p.stdin.write(cmd + "\n")
            self.p.stdin.flush()
            out = None
            for line in self.p.stdout:
                if line.strip() == "end":
                    break
                out = int(line.split()[1])
        return out

    def close(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=30) == 0


def test_copies_share_one_symbol_table(progs, tmp_path):
    """Two copies of a binary (two files, one build ID and size) cost one
    symbol table: the second resolves the same names through the first's
    object; a different binary costs its own table."""
    paths = [str(tmp_path / f"copy{i}") for i in range(2)]
    for p in paths:
        shutil.copy(progs["cxx_pie"], p)
    oracle = Oracle(progs["cxx_pie"])
    want = next(x.value for x in oracle.syms
                if oracle.demangled[x.name] == "int ns::twice<int>(int)")
    s = Session()
    procs = []
    try:
        before = s.memory()
        sizes = []
        for path in paths:
            p, rt = _serve(path)
            procs.append(p)
            b = rt["twice_int"] + 2
            assert s.ask(p.pid, [b])[b] == ("int ns::twice<int>(int)", want)
            sizes.append(s.memory())
        first, second = sizes[0] - before, sizes[1] - sizes[0]
        assert first > 0
        assert second < first / 4, (before, sizes)
        p, rt = _serve(progs["c_pie"])
        procs.append(p)
        a = rt["demo_gamma"]
        assert s.ask(p.pid, [a])[a][0] == "demo_gamma"
        assert s.memory() - sizes[1] > second, (before, sizes)
    finally:
        for p in procs:
            _stop(p)
        s.close()


@pytest.mark.parametrize("via", ["map_files", "proc_root"])
def test_reused_inode_gets_new_symbols(progs, tmp_path, via):
    """One symbolizer sees program A at (dev, inode); A exits, the file is
    rewritten in place with program B (same inode), B runs: B's symbols
    come out, not A's cached ones."""
    prefix = ()
    if via == "proc_root":
        if not _can_drop_caps():
            pytest.skip("needs root and setpriv")
        prefix = NO_MAP_FILES
    path = str(tmp_path / "victim")
    shutil.copy(progs["c_pie"], path)
    ino = os.stat(path).st_ino
    a_oracle, b_oracle = Oracle(progs["c_pie"]), Oracle(progs["cxx_pie"])
    s = Session(prefix)
    try:
        p, rt = _serve(path)
        try:
            if via == "proc_root":
                mf = os.listdir(f"/proc/{p.pid}/map_files")[0]
                r = subprocess.run(NO_MAP_FILES + [
                    "cat", f"/proc/{p.pid}/map_files/{mf}"],
                    capture_output=True)
                if r.returncode == 0:
                    pytest.skip("map_files readable without CAP_SYS_ADMIN")
            a = rt["demo_gamma"]
            want = next(x.value for x in a_oracle.syms
                        if x.name == "demo_gamma")
            assert s.ask(p.pid, [a])[a] == ("demo_gamma", want)
        finally:
            _stop(p)
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(open(progs["cxx_pie"], "rb").read())
        assert os.stat(path).st_ino == ino
        p, rt = _serve(path)
        try:
            b = rt["twice_int"] + 2
            want = next(x.value for x in b_oracle.syms
                        if b_oracle.demangled[x.name] ==
                        "int ns::twice<int>(int)")
            assert s.ask(p.pid, [b])[b] == ("int ns::twice<int>(int)", want)
            # And again, now from the fresh cache entry.
            assert s.ask(p.pid, [b])[b] == ("int ns::twice<int>(int)", want)
        finally:
            _stop(p)
    finally:
        s.close()


# --- kallsyms: nothing past the end of the text ---------------------------

FAKE_KALLSYMS_BOUNDS = """\
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t early_fn
ffffffff81001000 T late_fn
ffffffff81002000 T _etext
ffffffff81002000 D data_after_text
ffffffff81100000 T _sinittext
ffffffff81100010 t init_fn
ffffffff81100400 T _einittext
ffffffffc0001000 t a_first\t[mod_a]
ffffffffc0001800 t a_last\t[mod_a]
ffffffffc0040000 t b_only\t[mod_b]
ffffffffc0100000 t bpf_prog_1\t[bpf]
ffffffffc0180000 t bpf_prog_2\t[bpf]
"""


def test_kallsyms_text_bounds_synthetic(tmp_path):
    """vmlinux text ends at _etext and _einittext; a module's last symbol
    covers at most 64 KiB; a symbol followed by one of its own module
    covers up to it."""
    path = str(tmp_path / "kallsyms")
    open(path, "w").write(FAKE_KALLSYMS_BOUNDS)
    K = 0xffffffff81000000
    M = 0xffffffffc0000000
    gap = 64 << 10
    probes = {
        K + 0x100: ("early_fn", K + 0x100, ""),
        K + 0x1fff: ("late_fn", K + 0x1000, ""),
        K + 0x2000: None,                       # _etext itself
        K + 0x2001: None,
        K + 0x50000: None,                      # between text and init
        K + 0x100000: None,                     # _sinittext: a marker too
        K + 0x100010: ("init_fn", K + 0x100010, ""),
        K + 0x1003ff: ("init_fn", K + 0x100010, ""),
        K + 0x100400: None,                     # _einittext
        K + 0x200000: None,
        M + 0x1000: ("a_first", M + 0x1000, "mod_a"),
        M + 0x17ff: ("a_first", M + 0x1000, "mod_a"),
        M + 0x1800 + gap - 1: ("a_last", M + 0x1800, "mod_a"),
        M + 0x1800 + gap: None,
        M + 0x3ffff: None,
        M + 0x40000 + gap - 1: ("b_only", M + 0x40000, "mod_b"),
        M + 0x40000 + gap: None,
        M + 0x150000: ("bpf_prog_1", M + 0x100000, "bpf"),
        M + 0x180000 + gap - 1: ("bpf_prog_2", M + 0x180000, "bpf"),
        M + 0x180000 + gap: None,
        2**64 - 1: None,
    }
    rc, lines, got = symbolize_kallsyms(list(probes), path)
    assert rc == 0
    # _sinittext's address is init_fn's "_sinittext" only: one symbol.
    got[K + 0x100000] = None if got[K + 0x100000] is None or \
        got[K + 0x100000][0] == "_sinittext" else got[K + 0x100000]
    assert got == probes


def test_kallsyms_synthetic_without_markers(tmp_path):
    """No _etext in the file: vmlinux's last symbol gets the same 64 KiB
    bound as a module's, so does the last symbol of the file."""
    path = str(tmp_path / "kallsyms")
    open(path, "w").write(FAKE_KALLSYMS)
    gap = 64 << 10
    probes = {
        0xffffffff81000500 + gap - 1: ("last_text", 0xffffffff81000500, ""),
        0xffffffff81000500 + gap: None,
        0xffffffffc0002000 + gap - 1: ("mod_b_fn", 0xffffffffc0002000,
                                       "mod_b"),
        0xffffffffc0002000 + gap: None,
    }
    rc, _, got = symbolize_kallsyms(list(probes), path)
    assert rc == 0
    assert got == probes


def test_kallsyms_text_end_live():
    """On this kernel: the byte before _etext belongs to the last text
    symbol below it (per /proc/kallsyms); _etext and past it, nothing."""
    syms = _kallsyms()
    if all(a == 0 for a, *_ in syms):
        pytest.skip("kptr_restrict hides kernel addresses")
    text = [s for s in syms if s[1] in "tTwW"]
    etext = next((a for a, _, n, m in text if n == "_etext" and not m),
                 None)
    if etext is None:
        pytest.skip("no _etext in /proc/kallsyms")
    below = max(a for a, _, n, m in text if a < etext)
    names = {n for a, _, n, m in text if a == below}
    above = min((a for a, *_ in text if a > etext), default=None)
    probes = [etext - 1, etext, etext + 1]
    if above is None or above > etext + 0x100:
        probes.append(etext + 0xff)
    rc, _, got = symbolize_kallsyms(probes)
    assert rc == 0
    assert got[etext - 1][1] == below and got[etext - 1][0] in names
    for a in probes[1:]:
        assert got[a] is None, (hex(a), got[a])


LABEL_SRC = r"""
/* Code whose only symbols are labels (no .type: NOTYPE), as hand-written
 * assembly leaves them (ld.so's _start, _dl_start_user), and a label
 * inside a sized function (which keeps the function's name). */
__asm__(".text\n.p2align 4\n.globl demo_label_entry\ndemo_label_entry:\n"
	" nop\n nop\n nop\n nop\n"
	".globl demo_label_after\ndemo_label_after:\n nop\n nop\n nop\n ret\n"
	".p2align 4\n.globl demo_labelled_fn\n.type demo_labelled_fn,@function\n"
	"demo_labelled_fn:\n nop\n nop\n"
	".globl demo_inner_label\ndemo_inner_label:\n nop\n nop\n ret\n"
	".size demo_labelled_fn, .-demo_labelled_fn\n");
int main(void) { return 0; }
"""


def readelf_symbols(path):
    """{name: (value, type)} of @path's .symtab, per readelf."""
    out = {}
    for line in run(["readelf", "-sW", path]).splitlines():
        parts = line.split()
        if len(parts) >= 8 and re.fullmatch(r"\d+:", parts[0]):
            out[parts[7]] = (int(parts[1], 16), parts[3])
    return out


def test_code_labels_name_uncovered_code(tmp_path):
    """A NOTYPE symbol in an executable section names the code from it up
    to the next symbol when no function symbol covers it (as perf does:
    ld.so's _start and _dl_start_user, the bottom frames of every process
    start, were unnamed), and never renames code inside a function."""
    src, path = tmp_path / "labels.c", str(tmp_path / "labels")
    src.write_text(LABEL_SRC)
    subprocess.run(["gcc", "-O2", "-o", path, str(src)], check=True)
    sym = readelf_symbols(path)
    for n in ("demo_label_entry", "demo_label_after", "demo_inner_label"):
        assert sym[n][1] == "NOTYPE", (n, sym[n])
    entry, after = sym["demo_label_entry"][0], sym["demo_label_after"][0]
    fn, inner = sym["demo_labelled_fn"][0], sym["demo_inner_label"][0]
    want = {entry: ("demo_label_entry", entry),
            entry + 3: ("demo_label_entry", entry),  # a return address - 1
            after: ("demo_label_after", after),
            after + 3: ("demo_label_after", after),
            inner: ("demo_labelled_fn", fn),
            inner + 2: ("demo_labelled_fn", fn)}
    _, got = symbolize(path, sorted(want))
    assert got == want, {hex(a): g for a, g in got.items()}


def test_ld_so_start_named_from_its_debug_file():
    """ld.so's _start (the frame under _dl_start while a process starts)
    is a label in libc6-dbg's debug file: named, per readelf of it."""
    path = _system_lib("ld-linux-x86-64.so.2")
    if not path:
        pytest.skip("ld-linux-x86-64.so.2 not found")
    dbg = build_id_debug_path(path)
    if not dbg or not os.path.exists(dbg):
        pytest.skip("no debug file for ld.so (libc6-dbg) installed")
    sym = readelf_symbols(dbg)
    if sym.get("_start", (0, ""))[1] != "NOTYPE" or "_dl_start_user" not in sym:
        pytest.skip("this ld.so's _start is not a label")
    start, user = sym["_start"][0], sym["_dl_start_user"][0]
    # _start calls _dl_start; its return address is _dl_start_user
    want = {user - 1: ("_start", start), user: ("_dl_start_user", user)}
    _, got, err = symbolize_full(path, sorted(want))
    assert debug_used(err) == dbg
    assert got == want, {hex(a): g for a, g in got.items()}
