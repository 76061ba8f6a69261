"""HotSpot: a live JVM's vmStructs, the offsets derived from them and the
naming of code cache pcs (src/hotspot/), against the JVM's own tools.

tests/unit/hotspot_probe.c finds the JVM of a process by its symbols, reads
its tables with process_vm_readv and names pcs. Oracles:
- `jhsdb clhsdb` (the Serviceability Agent, which reads the same tables
  its own way): `vmstructsdump`, `intConstant`, `longConstant`,
  `field TYPE` (statics), and `findpc ADDR` (what is at a pc);
- `jcmd PID Compiler.codelist`: every nmethod's compile id, level,
  method, blob address and code range.
Each JDK under /usr/lib/jvm with javac and jhsdb is tried (Debian's
openjdk-17, the JDK 25 there), also with -XX:-UseCompressedOops and a
small code cache (one unsegmented heap), and a JVM killed while it is read.
And tests/workloads/hotspot_fake.c, a process that exports the symbols
with tables and a code heap of its own, hostile where asked: each case
gives the named outcome, never a crash or a wrong name.
"""
import glob
import os
import re
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, run_unit, start, stop, unit_program

PROBE = os.path.join(BUILD, "tests", "unit", "hotspot_probe")
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "java", "HotLoop.java")
MAIN = "profd.hot.HotLoop"


def jdks():
    seen, out = set(), []
    for d in sorted(glob.glob("/usr/lib/jvm/*")):
        real = os.path.realpath(d)
        tools = [os.path.join(real, "bin", t) for t in ("java", "javac", "jhsdb", "jcmd")]
        if real in seen or not all(os.access(t, os.X_OK) for t in tools):
            continue
        seen.add(real)
        out.append(real)
    return out


JDKS = jdks()  # none: the JVM tests are skipped (an empty parameter set)


def jdk_id(jdk):
    return os.path.basename(jdk)


def build_probe():
    r = subprocess.run(["make", "-C", ROOT, "build/tests/unit/hotspot_probe"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return PROBE


def probe(pid, *args, stdin=None, check=True):
    r = subprocess.run([build_probe(), str(pid)] + list(args), capture_output=True,
                       text=True, input=stdin, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


CODELIST = re.compile(r"^(\d+) (\d+) (\d+) (\S+) \[(0x[0-9a-f]+), (0x[0-9a-f]+) - "
                      r"(0x[0-9a-f]+)\]$")


def codelist(jdk, pid):
    """{blob address: (compile id, level, name, signature, begin, end)}"""
    out = subprocess.run([os.path.join(jdk, "bin", "jcmd"), str(pid), "Compiler.codelist"],
                         capture_output=True, text=True, timeout=60).stdout
    res = {}
    for line in out.splitlines():
        m = CODELIST.match(line.strip())
        if not m:
            continue
        method = m.group(4)
        name, sig = method[:method.index("(")], method[method.index("("):]
        res[int(m.group(5), 16)] = (int(m.group(1)), int(m.group(2)), name, sig,
                                    int(m.group(6), 16), int(m.group(7), 16))
    return res


def stable_codelist(jdk, pid):
    """The nmethods present, unchanged, in two listings a moment apart."""
    a = codelist(jdk, pid)
    time.sleep(0.2)
    b = codelist(jdk, pid)
    return {k: v for k, v in a.items() if b.get(k) == v}


@pytest.fixture
def jvm(tmp_path):
    started = []

    def run(jdk, *flags):
        classes = tmp_path / ("classes-" + jdk_id(jdk))
        if not classes.exists():
            subprocess.run([os.path.join(jdk, "bin", "javac"), "-d", str(classes), WORKLOAD],
                           check=True, timeout=120)
        p = start([os.path.join(jdk, "bin", "java"), *flags, "-cp", str(classes), MAIN],
                  stdout=subprocess.PIPE, text=True)
        started.append(p)
        line = p.stdout.readline()
        assert line.startswith("ready"), f"the JVM did not start: {line!r}"
        # the hot methods reach C2 (level 4)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            names = {(v[2], v[1]) for v in codelist(jdk, p.pid).values()}
            if ("profd.hot.HotLoop.work", 4) in names and \
                    ("profd.hot.HotLoop$Inner.mix", 4) in names:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the hot methods were never compiled by C2")
        return p

    yield run
    for p in started:
        stop(p)


def clhsdb(jdk, pid, commands):
    r = subprocess.run([os.path.join(jdk, "bin", "jhsdb"), "clhsdb", "--pid", str(pid)],
                       input="\n".join(commands) + "\n", capture_output=True, text=True,
                       timeout=300)
    return [line.replace("hsdb> ", "") for line in r.stdout.splitlines()]


def norm_type(t):
    """A C++ type as the SA prints it: without const, quoted when it has spaces."""
    t = t.strip('"')
    t = re.sub(r"^const ", "", t)
    t = re.sub(r" const$", "", t)
    return f'"{t}"' if " " in t else t


def parse_entries(lines):
    types, fields, consts = {}, {}, {}
    for line in lines:
        # names with spaces are quoted: split on quotes first
        parts = re.findall(r'"[^"]*"|\S+', line)
        if not parts:
            continue
        if parts[0] == "type" and len(parts) == 7:
            types[norm_type(parts[1])] = (parts[2], parts[3], parts[4], parts[5], parts[6])
        elif parts[0] == "field" and len(parts) == 7:
            fields[(parts[1], parts[2])] = (norm_type(parts[3]), parts[4], int(parts[5]),
                                            int(parts[6], 16))
        elif parts[0] in ("intConstant", "longConstant") and len(parts) == 3:
            consts[(parts[0], parts[1])] = int(parts[2])
    return types, fields, consts


@pytest.mark.parametrize("jdk", JDKS, ids=jdk_id)
def test_vmstructs_match_the_serviceability_agent(jvm, jdk):
    p = jvm(jdk)
    ours = probe(p.pid, "vmstructs").stdout.splitlines()
    o_types, o_fields, o_consts = parse_entries(ours)
    statics = sorted({t for (t, _), v in o_fields.items() if v[1] == "true"})
    sa = clhsdb(jdk, p.pid, ["vmstructsdump", "intConstant", "longConstant"] +
                [f"field {t}" for t in ("CodeCache", "Universe", "StubRoutines")])
    s_types, s_fields, s_consts = parse_entries(sa)
    assert len(o_fields) > 500 and len(o_types) > 300 and len(o_consts) > 300
    assert statics, "no static field read"
    # every entry we read is the SA's, value for value (the SA adds types
    # of its own: pointer types and inherited fields)
    for k, v in o_types.items():
        assert s_types.get(k) == v, f"type {k}: ours {v}, the SA's {s_types.get(k)}"
    compared = 0
    for k, v in o_fields.items():
        if v[1] == "true" and k[0] not in ("CodeCache", "Universe", "StubRoutines"):
            continue  # statics of other types: not asked of the SA
        assert s_fields.get(k) == v, f"field {k}: ours {v}, the SA's {s_fields.get(k)}"
        compared += 1
    assert compared > 500
    assert o_consts == s_consts
    # and the SA has no field of a type we know that we lack
    missing = [k for k in s_fields if k not in o_fields and k[0] in o_types and
               not k[0].startswith("GrowableArray<")]  # the SA copies inherited fields
    assert not missing, missing[:10]


def offsets(pid):
    return dict((line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1]))
                for line in probe(pid, "offsets").stdout.splitlines())


@pytest.mark.parametrize("jdk", JDKS, ids=jdk_id)
def test_offsets_from_vmstructs(jvm, jdk):
    p = jvm(jdk)
    off = offsets(p.pid)
    assert off["features"] == 255, off  # every feature of offsets.h
    sa = clhsdb(jdk, p.pid, ["vmstructsdump", "field CodeCache"])
    _, s_fields, _ = parse_entries(sa)
    n = 0
    for name, value in off.items():
        if "::" not in name or value < 0 or name.startswith(("&", "CodeBlobKind",
                                                             "HeapBlock::_header.")):
            continue
        t, f = name.rsplit("::", 1)
        assert s_fields[(t, f)][2] == value, name
        n += 1
    assert n >= 25
    for f in ("_heaps", "_low_bound", "_high_bound"):
        assert off["&CodeCache::" + f] == s_fields[("CodeCache", f)][3]
    hb = s_fields[("HeapBlock", "_header")][2]
    assert off["HeapBlock::_header._length"] == hb + s_fields[("HeapBlock::Header", "_length")][2]
    assert off["HeapBlock::_header._used"] == hb + s_fields[("HeapBlock::Header", "_used")][2]
    # what differs between the JDKs: code range pointers (17) or offsets (23+)
    if off["CodeBlob::_code_begin"] < 0:
        assert off["CodeBlob::_code_offset"] >= 0 and off["CodeBlob::_kind"] >= 0
        assert off["CodeBlobKind::Nmethod"] >= 0
    else:
        assert off["CodeBlob::_code_end"] >= 0


def name_pcs(pid, pcs):
    """{pc: the probe's fields after the pc}"""
    out = probe(pid, "pc", "-", stdin="".join(f"{pc:#x}\n" for pc in pcs)).stdout
    return {int(line.split()[0], 16): line.split(None, 1)[1] for line in out.splitlines()}


def check_codelist(pid, nm, relist=None, need=0.9):
    """Every nmethod of the listing named as the listing says, at its blob
    address, code start, middle and last byte. A pc whose nmethod was
    flushed meanwhile may be unnamed, or (with @relist, a listing taken
    after the probe) named as that later listing says of the nmethod there
    now; never otherwise."""
    pcs = {}
    for blob, (cid, level, name, sig, begin, end) in nm.items():
        for pc in (blob, begin, (begin + end) // 2, end - 1):
            pcs[pc] = (blob, cid, level, name, sig, begin, end)
    got = name_pcs(pid, pcs)
    named, after = 0, None
    for pc, (blob, cid, level, name, sig, begin, end) in pcs.items():
        f = got[pc].split()
        if f[0] == "none":
            continue  # flushed meanwhile: no name is allowed, a wrong one is not
        assert f[0] == "nmethod", (hex(pc), got[pc])
        where = (int(f[1], 16), int(f[2], 16), int(f[3], 16))
        if where != (blob, begin, end) and relist:
            # replaced since the listing: as the listing after the probe says
            after = after if after is not None else relist()
            blob, begin, end = where
            assert blob in after, (hex(pc), got[pc], "not in the later listing")
            cid, level, name, sig = after[blob][:4]
            assert after[blob][4:] == (begin, end), (got[pc], after[blob])
        assert where == (blob, begin, end), got[pc]
        assert (int(f[4]), int(f[5])) == (cid, level), got[pc]
        assert (f[8], f[9]) == (name, sig), got[pc]
        named += 1
    assert named >= need * len(pcs), f"{named} of {len(pcs)} pcs named"
    return named


@pytest.mark.parametrize("flags", [(), ("-XX:-UseCompressedOops",
                                         "-XX:ReservedCodeCacheSize=16m")],
                         ids=["default", "no-compressed-oops-small-code-cache"])
@pytest.mark.parametrize("jdk", JDKS, ids=jdk_id)
def test_nmethods_named_as_compiler_codelist(jvm, jdk, flags):
    p = jvm(jdk, *flags)
    nm = stable_codelist(jdk, p.pid)
    names = {v[2] for v in nm.values()}
    for want in ("profd.hot.HotLoop.work", "profd.hot.HotLoop$Inner.mix",
                 "profd.hot.HotLoop$1.compare"):
        assert want in names, sorted(names)
    # a hidden class (the lambda's): "HotLoop$$Lambda.../0x..." as Java names it
    assert any(n.startswith("profd.hot.HotLoop$$Lambda") and "/0x" in n for n in names), \
        sorted(names)
    # a 16 MB code cache flushes more between the listing and the probe
    assert check_codelist(p.pid, nm, lambda: codelist(jdk, p.pid),
                          need=0.75 if flags else 0.9) >= 40
    heaps = [line for line in probe(p.pid, "pc").stderr.splitlines() if " heap " in line]
    # a small code cache is one heap; the default one three (segmented)
    assert len(heaps) == (1 if flags else 3), heaps


def codecache_bounds(jdk, pid):
    out = subprocess.run([os.path.join(jdk, "bin", "jcmd"), str(pid), "Compiler.codecache"],
                         capture_output=True, text=True, timeout=60).stdout
    return [(int(a, 16), int(b, 16)) for a, b in
            re.findall(r"bounds \[(0x[0-9a-f]+), (0x[0-9a-f]+), 0x[0-9a-f]+\]", out)]


FINDPC = re.compile(r"^Address (0x[0-9a-f]+): In (.*)$")


def sa_says(rest):
    """(kind, name) from the SA's findpc text, or None when it names no blob."""
    m = re.match(r"code in NMethod for (\S+?)(\(.*?) content:", rest)
    if m:
        # the SA writes the internal name ("p/C$$Lambda+0x...")
        name = re.sub(r"\+(0x[0-9a-f]+)$", r"/\1", m.group(1).replace("/", "."))
        return ("nmethod", name + " " + m.group(2))
    if rest.startswith("interpreter codelet"):
        return ("blob", "Interpreter")
    m = re.match(r"code in (.*?) content:", rest)
    if m:
        return ("blob", m.group(1))
    return None


@pytest.mark.parametrize("jdk", JDKS, ids=jdk_id)
def test_pcs_named_as_jhsdb_findpc(jvm, jdk):
    p = jvm(jdk)
    pcs = []
    for lo, hi in codecache_bounds(jdk, p.pid):
        step = max((hi - lo) // 40, 0x100)
        pcs += list(range(lo + 0x123, hi, step))
    pcs += [v[4] + 8 for v in stable_codelist(jdk, p.pid).values()][:20]
    ours = name_pcs(p.pid, pcs)
    sa = {}
    # the SA loses its footing now and then: small sessions, errors skipped
    for i in range(0, len(pcs), 15):
        for line in clhsdb(jdk, p.pid, [f"findpc {pc:#x}" for pc in pcs[i:i + 15]]):
            m = FINDPC.match(line.strip())
            if m and sa_says(m.group(2)):
                sa[int(m.group(1), 16)] = sa_says(m.group(2))
    agree = 0
    for pc, (kind, name) in sa.items():
        f = ours[pc].split(None, 5)
        if kind == "nmethod":
            assert f[0] == "nmethod", (hex(pc), name, ours[pc])
            got = " ".join(ours[pc].split()[8:10])
        else:
            assert f[0] == "blob", (hex(pc), name, ours[pc])
            got = f[5]
        # the SA prefixes some blobs with their class ("RuntimeStub: ...")
        assert got == name or name.endswith(": " + got), (hex(pc), name, ours[pc])
        agree += 1
    kinds = {k for k, _ in sa.values()}
    assert agree >= 15 and kinds == {"nmethod", "blob"}, (agree, sa)


@pytest.mark.parametrize("jdk", JDKS, ids=jdk_id)
def test_jvm_killed_mid_read(jvm, jdk, tmp_path):
    p = jvm(jdk)
    nm = stable_codelist(jdk, p.pid)
    by_pc = {v[4]: (blob,) + v for blob, v in nm.items()}
    (tmp_path / "pcs").write_text("".join(f"{pc:#x}\n" for pc in by_pc) * 2000)
    with open(tmp_path / "pcs") as pcs, open(tmp_path / "out", "w") as out:
        r = subprocess.Popen([build_probe(), str(p.pid), "pc", "-"], stdin=pcs, stdout=out,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        stop(p)
        _, err = r.communicate(timeout=120)
    assert r.returncode in (0, 1), (r.returncode, err)  # no crash, no hang
    named = gone = 0
    for line in (tmp_path / "out").read_text().splitlines():
        f = line.split()
        pc = int(f[0], 16)
        if f[1] == "none":
            assert f[2] in ("read-error", "unverified", "free"), line
            gone += 1
            continue
        blob, cid, level, name, sig, begin, end = by_pc[pc]
        assert f[1] == "nmethod", line
        assert (int(f[2], 16), int(f[5]), f[9], f[10]) == (blob, cid, name, sig), line
        named += 1
    assert named > 0 and gone > 0, (named, gone)


@pytest.fixture
def fake(tmp_path):
    exe = str(tmp_path / "hotspot_fake")
    subprocess.run(["cc", "-O0", "-g", "-rdynamic", "-o", exe,
                    os.path.join(ROOT, "tests", "workloads", "hotspot_fake.c")], check=True)
    started = []

    def run(mode):
        p = start([exe, mode], stdout=subprocess.PIPE, text=True)
        started.append(p)
        line = p.stdout.readline().split()
        assert line and line[0] == "ready", line
        return p, [int(x, 16) for x in line[1:]]

    yield run
    for p in started:
        stop(p)


@pytest.mark.parametrize("mode,error", [("notready", "Resource temporarily unavailable"),
                                        ("badlayout", "Protocol error"),
                                        ("endless", "Protocol error")])
def test_hostile_tables_refused(fake, mode, error):
    p, _ = fake(mode)
    r = probe(p.pid, "vmstructs", check=False)
    assert r.returncode == 1 and r.stderr.strip().endswith(error), r.stderr


def test_hostile_code_heap(fake):
    p, pcs = fake("heap")
    got = name_pcs(p.pid, pcs)
    want = ["blob FakeStub", "none free", "nmethod fake.pkg.Hot.run ()V", "none unverified",
            "none unverified", "none read-error", "none free", "none unverified",
            "none unverified", "none unverified"]
    for pc, w in zip(pcs, want):
        f = got[pc].split()
        assert f[0] == w.split()[0] and f[-len(w.split()) + 1:] == w.split()[1:], (w, got[pc])


def test_unit_interpreter_range():
    """tests/unit/test_hotspot_interp.c: the interpreter's range is its
    StubQueue's codelets, never the buffer's unused tail that a starting
    JVM hands back to the code cache (a JVM attached in that window walked
    C1 code there as interpreter frames: CI, stop 30)."""
    unit_program("test_hotspot_interp")
    run_unit("test_hotspot_interp")
