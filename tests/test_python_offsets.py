"""CPython layouts and interpreter detection (src/python/offsets.c,
src/python/detect.c), against independent oracles.

a) DWARF: for every pyenv build of 3.9 - 3.13 present under
   /root/.pyenv/versions, gdb (batch mode) reads each offset, size and enum
   value of our table from the DWARF of lib/libpython3.X.so.1.0, and every
   field our table marks absent must be absent from that DWARF too.
b) Live: inside each interpreter (Debian's stripped /usr/bin/python3.11,
   which has no DWARF, and each pyenv build), ctypes reads memory at our
   offsets and compares with what Python reports: code, bytes and str
   fields; the thread state (thread_id, native_thread_id) from
   PyThreadState_Get(); the frame chain (current frame, previous, code,
   position, is_entry/owner, the C-stack shim frame of 3.12+); and
   _PyRuntime -> interpreters -> thread states, with a second thread and a
   subinterpreter. Every offset is then perturbed in turn: the probe must
   notice each one, so these checks can fail.
c) Detection: build/tests/unit/test_python_detect on real interpreters,
   non-interpreters, renamed copies and corrupt files, compared with
   readelf -sW / nm -D and with the interpreters' own sys.version_info;
   version fallbacks on copies whose Py_Version / Py_GetVersion symbols
   were renamed, and on small programs built here with gcc; an ASan/UBSan
   build of detect.c on the corrupt inputs.
"""
import errno
import glob
import json
import os
import random
import re
import shutil
import struct
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DETECT = os.path.join(ROOT, "build", "tests", "unit", "test_python_detect")
PYENV = "/root/.pyenv/versions"
DEBIAN_PY = "/usr/bin/python3.11"
MINORS = [9, 10, 11, 12, 13]
# enum values of offsets.h
OBJECTS, IS_ENTRY, CSTACK_SHIM = 1, 2, 3
LASTI_BYTES, LASTI_CODEUNITS, LASTI_PREV_INSTR, LASTI_INSTR_PTR = 1, 2, 3, 4
LNOTAB, LT310, LOCATIONS = 1, 2, 3
# What py_detect_* may return for a corrupt file (besides 1 and 0).
CORRUPT_RCS = {1, 0, -errno.ENOEXEC, -errno.ENOTSUP}


def pyenv_dirs(minor):
    return sorted(d for d in glob.glob(os.path.join(PYENV, "3.%d.*" % minor))
                  if os.path.isfile(pyenv_lib(d)))


def pyenv_lib(d):
    minor = os.path.basename(d).split(".")[1]
    return os.path.join(d, "lib", "libpython3.%s.so.1.0" % minor)


def pyenv_bin(d):
    minor = os.path.basename(d).split(".")[1]
    return os.path.join(d, "bin", "python3.%s" % minor)


def _pyenv_params():
    params = []
    for minor in MINORS:
        dirs = pyenv_dirs(minor)
        if not dirs:
            params.append(pytest.param(
                minor, None, id="3.%d" % minor,
                marks=pytest.mark.skip(reason="no pyenv build of 3.%d under %s"
                                       % (minor, PYENV))))
        params += [pytest.param(minor, d, id=os.path.basename(d)) for d in dirs]
    return params


PYENV_BUILDS = _pyenv_params()


def run_detect(*paths, exe=DETECT):
    assert os.access(exe, os.X_OK), exe + " missing: run make"
    p = subprocess.run([exe, *paths], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s exited %d\n%s" % (exe, p.returncode, p.stderr)
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert [o["path"] for o in out] == list(paths)
    return out


@pytest.fixture(scope="session")
def table():
    assert os.access(DETECT, os.X_OK), DETECT + " missing: run make"
    p = subprocess.run([DETECT, "--offsets"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def offsets_for(table, minor):
    off = dict(table["3.%d" % minor])
    off["none"] = table["none"]
    return off


def interpreter_version(python):
    out = subprocess.run([python, "-I", "-c", "import sys; print(*sys.version_info[:3])"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [int(x) for x in out.split()]


# ---- a) the table against DWARF ------------------------------------------

def dwarf_exprs(minor):
    """Each field of struct py_offsets -> (the C expression gdb evaluates
    for this version, its source). Fields our table marks absent must make
    gdb fail: the member (or type, or enumerator) does not exist."""
    old = minor < 11
    frame = "PyFrameObject" if old else "_PyInterpreterFrame"

    def off(typ, member):
        return "&((%s *)0)->%s" % (typ, member)
    tstate_frame = "frame" if old else ("cframe" if minor < 13 else "current_frame")
    return {
        "runtime_interpreters_head": off("_PyRuntimeState", "interpreters.head"),
        "interp_next": off("PyInterpreterState", "next"),
        "interp_threads_head": off("PyInterpreterState",
                                   "tstate_head" if old else "threads.head"),
        "tstate_next": off("PyThreadState", "next"),
        "tstate_thread_id": off("PyThreadState", "thread_id"),
        "tstate_native_thread_id": off("PyThreadState", "native_thread_id"),
        "tstate_frame": off("PyThreadState", tstate_frame),
        "cframe_current_frame": off("_PyCFrame", "current_frame"),
        "frame_code": off(frame, "f_executable" if minor >= 13 else "f_code"),
        "frame_previous": off(frame, "f_back" if old else "previous"),
        "frame_instr": off(frame, "f_lasti" if old else
                           ("instr_ptr" if minor >= 13 else "prev_instr")),
        "frame_is_entry": off(frame, "is_entry"),
        "frame_owner": off(frame, "owner"),
        "owner_cstack": "FRAME_OWNED_BY_CSTACK",
        "ob_type": off("PyObject", "ob_type"),
        "ob_size": off("PyVarObject", "ob_size"),
        "code_filename": off("PyCodeObject", "co_filename"),
        "code_name": off("PyCodeObject", "co_name"),
        "code_qualname": off("PyCodeObject", "co_qualname"),
        "code_firstlineno": off("PyCodeObject", "co_firstlineno"),
        "code_linetable": off("PyCodeObject", "co_lnotab" if minor == 9 else "co_linetable"),
        "code_code_adaptive": off("PyCodeObject", "co_code_adaptive"),
        "code_firsttraceable": off("PyCodeObject", "_co_firsttraceable"),
        "bytes_sval": off("PyBytesObject", "ob_sval"),
        "unicode_length": off("PyASCIIObject", "length"),
        "unicode_state": off("PyASCIIObject", "state"),
        "unicode_ascii_data": "sizeof(PyASCIIObject)",
        "unicode_compact_data": "sizeof(PyCompactUnicodeObject)",
    }


# Facts that decide frame_model / lasti_kind / linetable_format.
MODEL_EXPRS = {
    "sizeof_pyobject": "sizeof(PyObject)",
    "has_interpreter_frame": "sizeof(_PyInterpreterFrame)",
    "has_is_entry": "&((_PyInterpreterFrame *)0)->is_entry",
    "has_cstack": "FRAME_OWNED_BY_CSTACK",
    "f_lasti_size": "sizeof(((PyFrameObject *)0)->f_lasti)",
    "prev_instr_size": "sizeof(((_PyInterpreterFrame *)0)->prev_instr)",
    "instr_ptr_size": "sizeof(((_PyInterpreterFrame *)0)->instr_ptr)",
    "has_lnotab": "&((PyCodeObject *)0)->co_lnotab",
    "has_linetable": "&((PyCodeObject *)0)->co_linetable",
    "has_qualname": "&((PyCodeObject *)0)->co_qualname",
}

GDB_SCRIPT = r"""
import gdb, json
exprs = json.load(open(%r))
out = {}
for name, expr in exprs.items():
    try:
        out[name] = int(gdb.parse_and_eval("(long)(%%s)" %% expr))
    except gdb.error:
        out[name] = None
print("RESULT " + json.dumps(out))
"""


def gdb_eval(binary, exprs, tmp_path):
    gdb = shutil.which("gdb")
    assert gdb, "gdb missing (scripts/deps.sh --test installs it)"
    src = tmp_path / "exprs.json"
    src.write_text(json.dumps(exprs))
    script = tmp_path / "eval.py"
    script.write_text(GDB_SCRIPT % str(src))
    p = subprocess.run([gdb, "-batch", "-nx", "-x", str(script), binary],
                       capture_output=True, text=True, timeout=300)
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, "gdb failed on %s:\n%s%s" % (binary, p.stdout, p.stderr)
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.parametrize("minor,pydir", PYENV_BUILDS)
def test_table_matches_dwarf(table, minor, pydir, tmp_path):
    off = offsets_for(table, minor)
    none = table["none"]
    exprs = dwarf_exprs(minor)
    # Every field the CLI dumps is checked here (a field added to the
    # struct without a DWARF check fails this test).
    enums = {"major", "minor", "frame_model", "lasti_kind", "linetable_format", "none"}
    assert set(off) - enums == set(exprs)
    got = gdb_eval(pyenv_lib(pydir), {**exprs, **MODEL_EXPRS}, tmp_path)
    assert got["sizeof_pyobject"] == 16, "no usable DWARF in " + pyenv_lib(pydir)

    wrong = []
    for field, expr in exprs.items():
        absent = off[field] == (0xff if field == "owner_cstack" else none)
        want = None if absent else off[field]
        if got[field] != want:
            wrong.append("%s: table %s, DWARF %s (%s)" % (
                field, "absent" if absent else off[field],
                "absent" if got[field] is None else got[field], expr))
    assert not wrong, "3.%d:\n  " % minor + "\n  ".join(wrong)

    m = got
    if m["has_interpreter_frame"] is None:
        model = OBJECTS
    elif m["has_is_entry"] is not None:
        model = IS_ENTRY
    else:
        assert m["has_cstack"] is not None
        model = CSTACK_SHIM
    assert off["frame_model"] == model
    if model == OBJECTS:
        assert m["f_lasti_size"] == 4      # int f_lasti
        assert off["lasti_kind"] in (LASTI_BYTES, LASTI_CODEUNITS)
        # bytes or code units: the same int; the live test tells them apart
    elif m["prev_instr_size"] == 8:
        assert off["lasti_kind"] == LASTI_PREV_INSTR
    else:
        assert m["instr_ptr_size"] == 8
        assert off["lasti_kind"] == LASTI_INSTR_PTR
    if m["has_lnotab"] is not None:
        assert off["linetable_format"] == LNOTAB
    elif m["has_qualname"] is None:
        assert m["has_linetable"] is not None
        assert off["linetable_format"] == LT310
    else:
        assert off["linetable_format"] == LOCATIONS


def test_table_versions(table):
    """Exactly 3.9 - 3.13; the CLI itself checks other versions are refused."""
    assert sorted(k for k in table if k != "none") == sorted("3.%d" % m for m in MINORS)
    for m in MINORS:
        assert table["3.%d" % m]["major"] == 3 and table["3.%d" % m]["minor"] == m


# ---- b) the table against live interpreters ------------------------------

PROBE = r"""import ctypes
import json
import sys
import threading

OFF = json.loads(sys.argv[1])
NONE = OFF["none"]
FRAMES_OBJECTS, FRAMES_IS_ENTRY, FRAMES_CSTACK_SHIM = 1, 2, 3
LASTI_BYTES, LASTI_CODEUNITS, LASTI_PREV_INSTR, LASTI_INSTR_PTR = 1, 2, 3, 4
LNOTAB, LT310, LOCATIONS = 1, 2, 3
THREAD, GENERATOR = 0, 1        # enum _frameowner, 3.11+
checks = []


def check(name, got, want):
    checks.append([name, got, want])


def ptr(a):
    return ctypes.c_void_p.from_address(a).value or 0


def i32(a):
    return ctypes.c_int32.from_address(a).value


def i64(a):
    return ctypes.c_int64.from_address(a).value


def u64(a):
    return ctypes.c_uint64.from_address(a).value


def u8(a):
    return ctypes.c_uint8.from_address(a).value


def has(field):
    return OFF[field] != NONE


# ---- code, bytes and str objects -----------------------------------------

def sample(a, b):
    x = a + b
    return x


def sample_gen():
    yield 1


def sample_closure():
    v = 1

    def inner():
        return v
    return inner


def check_code(tag, code):
    c = id(code)
    check(tag + ".ob_type", ptr(c + OFF["ob_type"]), id(type(code)))
    check(tag + ".code_filename", ptr(c + OFF["code_filename"]), id(code.co_filename))
    check(tag + ".code_name", ptr(c + OFF["code_name"]), id(code.co_name))
    if has("code_qualname"):
        check(tag + ".code_qualname", ptr(c + OFF["code_qualname"]), id(code.co_qualname))
    check(tag + ".code_firstlineno", i32(c + OFF["code_firstlineno"]), code.co_firstlineno)
    table = code.co_lnotab if OFF["linetable_format"] == LNOTAB else code.co_linetable
    check(tag + ".code_linetable", ptr(c + OFF["code_linetable"]), id(table))
    if has("code_code_adaptive"):
        units = len(code.co_code) // 2
        check(tag + ".ob_size", i64(c + OFF["ob_size"]), units)
        check(tag + ".code_code_adaptive",
              ctypes.string_at(c + OFF["code_code_adaptive"], 2 * units),
              code._co_code_adaptive)
    if has("code_firsttraceable"):
        import dis
        resume = dis.opmap["RESUME"]
        first = next(i for i in range(0, len(code.co_code), 2) if code.co_code[i] == resume)
        check(tag + ".code_firsttraceable", i32(c + OFF["code_firsttraceable"]), first // 2)
        return first // 2
    return None


def check_objects():
    check_code("sample", sample.__code__)
    gen_first = check_code("sample_gen", sample_gen.__code__)
    check_code("sample_closure.inner", sample_closure().__code__)
    if gen_first is not None:
        check("generator's first traceable unit is not 0", gen_first > 0, True)
    check("linetable format: co_positions", hasattr(sample.__code__, "co_positions"),
          OFF["linetable_format"] == LOCATIONS)
    check("linetable format: co_lines", hasattr(sample.__code__, "co_lines"),
          OFF["linetable_format"] != LNOTAB)

    b = b"profd-bytes\x00\xff"
    check("bytes.ob_type", ptr(id(b) + OFF["ob_type"]), id(bytes))
    check("bytes.ob_size", i64(id(b) + OFF["ob_size"]), len(b))
    check("bytes.ob_sval", ctypes.string_at(id(b) + OFF["bytes_sval"], len(b) + 1), b + b"\0")

    strings = [("ascii", "profd_ascii_name", 1, 1),
               ("latin1", "h\xe9llo_latin", 1, 0),
               ("ucs2", "caf\u20ac_ucs2", 2, 0),
               ("ucs4", "emoji_\U0001F600", 4, 0)]
    for tag, s, kind, ascii in strings:
        a = id(s)
        check("str %s.ob_type" % tag, ptr(a + OFF["ob_type"]), id(str))
        check("str %s.length" % tag, i64(a + OFF["unicode_length"]), len(s))
        state = ctypes.c_uint32.from_address(a + OFF["unicode_state"]).value
        check("str %s.state.kind" % tag, (state >> 2) & 7, kind)
        check("str %s.state.compact" % tag, (state >> 5) & 1, 1)
        check("str %s.state.ascii" % tag, (state >> 6) & 1, ascii)
        data = OFF["unicode_ascii_data"] if ascii else OFF["unicode_compact_data"]
        enc = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
        check("str %s.data" % tag, ctypes.string_at(a + data, kind * (len(s) + 1)),
              (s + "\0").encode(enc))


# ---- thread state and frame chain ----------------------------------------

PyThreadState_Get = ctypes.pythonapi.PyThreadState_Get
PyThreadState_Get.restype = ctypes.c_void_p
PyInterpreterState_Get = ctypes.pythonapi.PyInterpreterState_Get
PyInterpreterState_Get.restype = ctypes.c_void_p


def walk():
    '''The frames above this call, read through the thread state.'''
    # No Python call before the top frame is read: it must be this one.
    ts = PyThreadState_Get()
    f = ctypes.c_void_p.from_address(ts + OFF["tstate_frame"]).value
    if OFF["cframe_current_frame"] != NONE:
        f = ctypes.c_void_p.from_address(f + OFF["cframe_current_frame"]).value
    frames = []
    while f and len(frames) < 64:
        rec = {"frame": f, "code": ptr(f + OFF["frame_code"])}
        if OFF["frame_model"] == FRAMES_OBJECTS:
            rec["instr"] = i32(f + OFF["frame_instr"])
        else:
            rec["instr"] = ptr(f + OFF["frame_instr"])
        if has("frame_is_entry"):
            rec["is_entry"] = u8(f + OFF["frame_is_entry"])
        if has("frame_owner"):
            rec["owner"] = u8(f + OFF["frame_owner"])
        frames.append(rec)
        f = ptr(f + OFF["frame_previous"])
    caller = sys._getframe(1)
    return {"ts": ts, "frames": frames, "me": sys._getframe(),
            "caller_lasti": caller.f_lasti, "caller_code": caller.f_code}


def lasti_bytes(rec, code):
    '''A frame's instruction position as frame.f_lasti reports it.'''
    kind = OFF["lasti_kind"]
    if kind == LASTI_BYTES:
        return rec["instr"]
    if kind == LASTI_CODEUNITS:
        return rec["instr"] * 2
    return rec["instr"] - (id(code) + OFF["code_code_adaptive"])


def caller_plain():
    return walk()


def in_map(_):
    return walk()


def caller_via_c():
    return list(map(in_map, [0]))[0]


def caller_gen():
    yield walk()


def check_frames(tag):
    model = OFF["frame_model"]
    r = caller_plain()
    fr = r["frames"]
    check(tag + " top frame is walk()", fr[0]["code"], id(walk.__code__))
    check(tag + " previous is caller_plain()", fr[1]["code"], id(caller_plain.__code__))
    check(tag + " next is check_frames()", fr[2]["code"], id(check_frames.__code__))
    if model == FRAMES_OBJECTS:
        check(tag + " frame is the frame object", fr[0]["frame"], id(r["me"]))
    check(tag + " caller's lasti", lasti_bytes(fr[1], caller_plain.__code__), r["caller_lasti"])
    if has("frame_owner"):
        check(tag + " owner of walk()", fr[0]["owner"], THREAD)
    if has("frame_is_entry"):
        check(tag + " walk() is not an entry frame", fr[0]["is_entry"], 0)

    r = caller_via_c()
    fr = r["frames"]
    names = [f["code"] for f in fr]
    check(tag + " via C: walk()", names[0], id(walk.__code__))
    check(tag + " via C: in_map()", names[1], id(in_map.__code__))
    if model == FRAMES_CSTACK_SHIM:
        check(tag + " via C: shim frame owner", fr[2]["owner"], OFF["owner_cstack"])
        check(tag + " via C: then caller_via_c()", names[3], id(caller_via_c.__code__))
        check(tag + " via C: walk() owner", fr[0]["owner"], THREAD)
    else:
        check(tag + " via C: then caller_via_c()", names[2], id(caller_via_c.__code__))
    if model == FRAMES_IS_ENTRY:
        check(tag + " via C: in_map() is an entry frame", fr[1]["is_entry"], 1)
        check(tag + " via C: walk() is not", fr[0]["is_entry"], 0)

    r = next(caller_gen())
    fr = r["frames"]
    check(tag + " gen: caller_gen()", fr[1]["code"], id(caller_gen.__code__))
    if has("frame_owner"):
        check(tag + " gen: owner", fr[1]["owner"], GENERATOR)
    return r["ts"]


def interp_threads():
    rt = ctypes.addressof(ctypes.c_void_p.in_dll(ctypes.pythonapi, "_PyRuntime"))
    interps, tstates = [], []
    i = ptr(rt + OFF["runtime_interpreters_head"])
    while i and len(interps) < 16:
        interps.append(i)
        t = ptr(i + OFF["interp_threads_head"])
        while t and len(tstates) < 256:
            tstates.append(t)
            t = ptr(t + OFF["tstate_next"])
        i = ptr(i + OFF["interp_next"])
    return rt, interps, tstates


def check_thread(tag):
    ts = PyThreadState_Get()
    check(tag + " tstate_thread_id", u64(ts + OFF["tstate_thread_id"]), threading.get_ident())
    if has("tstate_native_thread_id"):
        check(tag + " tstate_native_thread_id", u64(ts + OFF["tstate_native_thread_id"]),
              threading.get_native_id())
    check(tag + " frames: same thread state", check_frames(tag), ts)
    rt, interps, tstates = interp_threads()
    check(tag + " runtime: first interpreter is this one", interps[0], PyInterpreterState_Get())
    check(tag + " runtime: this thread state is listed", ts in tstates, True)
    return rt, ts


def main():
    check_objects()
    rt, main_ts = check_thread("main thread")
    seen = {}

    def worker():
        seen["rt_ts"] = check_thread("second thread")
        seen["native"] = threading.get_native_id()
        _, _, seen["tstates"] = interp_threads()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    check("second thread: native id is not the pid", seen["native"] != __import__("os").getpid(), True)
    check("second thread: both thread states listed",
          main_ts in seen["tstates"] and seen["rt_ts"][1] in seen["tstates"], True)
    try:
        import _xxsubinterpreters as subinterpreters
    except ImportError:
        import _interpreters as subinterpreters    # 3.13
    sub = subinterpreters.create()
    _, interps, tstates = interp_threads()
    check("subinterpreter: two interpreters listed", len(interps), 2)
    check("subinterpreter: the new one is the head", interps[-1], PyInterpreterState_Get())
    check("subinterpreter: main thread state still listed", main_ts in tstates, True)
    subinterpreters.destroy(sub)
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append([lo, hi, int(parts[2], 16), parts[5].strip()])
    print(json.dumps({"version": list(sys.version_info[:3]), "runtime": rt,
                      "maps": maps, "checks": [[n, repr(g), repr(w), g == w] for n, g, w in checks]}))


main()
"""


def run_probe(python, off, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    return subprocess.run([python, "-I", str(script), json.dumps(off)],
                          capture_output=True, text=True, timeout=120)


def probe_failures(python, off, tmp_path):
    """The probe's failed checks, or a crash, as a list of strings."""
    p = run_probe(python, off, tmp_path)
    if p.returncode != 0:
        return ["probe exited %d: %s" % (p.returncode, p.stderr[-2000:])]
    res = json.loads(p.stdout)
    return ["%s: read %s, want %s" % (n, g, w) for n, g, w, ok in res["checks"] if not ok]


def first_load_vaddr(path):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                         check=True).stdout
    return min(int(l.split()[2], 16) for l in out.splitlines()
               if l.split()[:1] == ["LOAD"])


def check_live(python, binary, off, tmp_path):
    """Run the probe in @python (whose interpreter code lives in @binary):
    every check holds, and _PyRuntime's address minus the load bias of
    @binary is what detection reports."""
    p = run_probe(python, off, tmp_path)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    bad = ["%s: read %s, want %s" % (n, g, w) for n, g, w, ok in res["checks"] if not ok]
    assert not bad, "\n".join(bad)
    assert len(res["checks"]) > 60

    rt = res["runtime"]
    real = os.path.realpath(binary)
    # (_PyRuntime may lie in .bss past the file's data, mapped anonymously:
    # the bias comes from the file's first mapping.)
    maps = [m for m in res["maps"] if os.path.realpath(m[3]) == real]
    assert maps, binary + " not mapped by " + python
    base = min(lo for lo, _, offset, _ in maps if offset == 0)
    bias = base - (first_load_vaddr(binary) & ~0xfff)
    det = run_detect(binary)[0]
    assert det["rc"] == 1
    assert rt - bias == det["runtime"]
    assert [det["major"], det["minor"], det["micro"]] == res["version"]


def test_live_debian_python311(table, tmp_path):
    """Debian's interpreter: stripped, statically linked with libpython,
    no DWARF to check against, so the live probe is the oracle."""
    if not os.path.exists(DEBIAN_PY):
        pytest.skip(DEBIAN_PY + " absent")
    assert interpreter_version(DEBIAN_PY)[:2] == [3, 11]
    check_live(DEBIAN_PY, DEBIAN_PY, offsets_for(table, 11), tmp_path)


@pytest.mark.parametrize("minor,pydir", PYENV_BUILDS)
def test_live_pyenv(table, minor, pydir, tmp_path):
    check_live(pyenv_bin(pydir), pyenv_lib(pydir), offsets_for(table, minor), tmp_path)


def live_interpreters():
    params = []
    if os.path.exists(DEBIAN_PY):
        params.append(pytest.param(DEBIAN_PY, 11, id="debian-3.11"))
    for minor in MINORS:
        for d in pyenv_dirs(minor):
            params.append(pytest.param(pyenv_bin(d), minor, id=os.path.basename(d)))
    return params


@pytest.mark.parametrize("python,minor", live_interpreters())
def test_live_probe_notices_every_wrong_offset(table, python, minor, tmp_path):
    """Move each present offset by 8 (owner_cstack by 1): the probe must
    report a failed check or crash, for every field. Proves the live test
    above really checks each field."""
    off = offsets_for(table, minor)
    fields = [f for f in dwarf_exprs(minor)
              if off[f] != (0xff if f == "owner_cstack" else off["none"])]
    unnoticed = []
    for f in fields:
        bad = dict(off)
        bad[f] += 1 if f == "owner_cstack" else 8
        if not probe_failures(python, bad, tmp_path):
            unnoticed.append(f)
    assert not unnoticed, "probe passes with wrong " + ", ".join(unnoticed)


# ---- c) detection ---------------------------------------------------------

def readelf_symbols(path):
    """Defined symbols of .dynsym and .symtab: name -> (value, size)."""
    out = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) < 8 or not re.fullmatch(r"\d+:", p[0]) or p[6] == "UND":
            continue
        syms.setdefault(p[7].split("@")[0], (int(p[1], 16), int(p[2], 0)))
    return syms


def nm_dynamic(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3}


def expected_binary(path):
    s = readelf_symbols(path)
    cold = s.get("_PyEval_EvalFrameDefault.cold", (0, 0))
    return {
        "runtime": s["_PyRuntime"][0],
        "eval_start": s["_PyEval_EvalFrameDefault"][0],
        "eval_end": sum(s["_PyEval_EvalFrameDefault"]),
        "eval_cold_start": cold[0],
        "eval_cold_end": sum(cold),
        "code_type": s["PyCode_Type"][0],
        "unicode_type": s["PyUnicode_Type"][0],
        "bytes_type": s["PyBytes_Type"][0],
    }


def assert_detected(det, path, version):
    assert det["rc"] == 1, det
    assert [det["major"], det["minor"], det["micro"]] == version
    want = expected_binary(path)
    assert {k: det[k] for k in want} == want
    dyn = nm_dynamic(path)
    for sym, key in (("_PyRuntime", "runtime"), ("_PyEval_EvalFrameDefault", "eval_start"),
                     ("PyCode_Type", "code_type")):
        if sym in dyn:
            assert dyn[sym] == det[key], sym


def interpreters_with_versions():
    """(binary, interpreter whose version it has)."""
    out = []
    if os.path.exists(DEBIAN_PY):
        out.append((DEBIAN_PY, DEBIAN_PY))
    for d in sorted(glob.glob(os.path.join(PYENV, "3.*"))):
        if os.path.isfile(pyenv_lib(d)) and os.path.isfile(pyenv_bin(d)):
            out.append((pyenv_lib(d), pyenv_bin(d)))
    return out


def test_detect_interpreters():
    """Every libpython under pyenv (3.8 too: detected, though the table
    has no 3.8) and Debian's python3.11."""
    pairs = interpreters_with_versions()
    if not pairs:
        pytest.skip("no CPython interpreter on this machine")
    dets = run_detect(*[b for b, _ in pairs])
    for (binary, python), det in zip(pairs, dets):
        assert_detected(det, binary, interpreter_version(python))
    # gcc split _PyEval_EvalFrameDefault in some builds: the local .cold
    # symbol of .symtab must be reported where readelf shows one.
    assert any(d["eval_cold_start"] for d in dets) or \
        not any("_PyEval_EvalFrameDefault.cold" in readelf_symbols(b) for b, _ in pairs)


def test_detect_renamed_copy(tmp_path):
    """By symbols, not by name."""
    if not os.path.exists(DEBIAN_PY):
        pytest.skip(DEBIAN_PY + " absent")
    copy = tmp_path / "notpython"
    shutil.copy(DEBIAN_PY, copy)
    det = run_detect(str(copy))[0]
    assert_detected(det, str(copy), interpreter_version(DEBIAN_PY))


def test_detect_not_interpreters(tmp_path):
    """pyenv's bin/python3.X only link libpython; libc, a script, a
    directory-less device, an empty file: all 0, every field 0."""
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    paths = [p for p in glob.glob(os.path.join(PYENV, "3.*", "bin", "python3.*"))
             if re.fullmatch(r"python3\.\d+", os.path.basename(p))]
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    paths += [libc, "/bin/sh", "/usr/bin/python3-config" if os.path.exists(
        "/usr/bin/python3-config") else "/etc/passwd", "/dev/null", str(empty)]
    for det in run_detect(*paths):
        assert det["rc"] == 0, det
        assert all(v == 0 for k, v in det.items() if k not in ("path", "rc")), det
    assert run_detect(str(tmp_path / "missing"))[0]["rc"] == -errno.ENOENT


def rename_symbol(data, old, new):
    """Rename symbol @old to @new (same length) in every string table."""
    assert len(old) == len(new)
    count = data.count(b"\0" + old + b"\0")
    assert count > 0, old
    return data.replace(b"\0" + old + b"\0", b"\0" + new + b"\0")


def test_version_without_py_version(tmp_path):
    """Copies without Py_Version (renamed) fall back to the PY_VERSION
    string Py_GetVersion() loads (Debian's .rodata also holds "3.2.0",
    unicodedata's UCD version); without Py_GetVersion too, to the .rodata
    scan, which must refuse to choose between 3.11.2 and 3.2.0 (-ENOTSUP,
    addresses still set) and succeed where one candidate exists (pyenv:
    the tail of the install prefix)."""
    pairs = interpreters_with_versions()
    if not pairs:
        pytest.skip("no CPython interpreter on this machine")
    paths, want = [], []
    for i, (binary, python) in enumerate(pairs):
        version = interpreter_version(python)
        data = open(binary, "rb").read()
        if b"\0Py_Version\0" in data:
            data = rename_symbol(data, b"Py_Version", b"Py_Versioq")
            path = tmp_path / ("nover%d" % i)
            path.write_bytes(data)
            paths.append(str(path))
            want.append((binary, 1, version))
        data = rename_symbol(data, b"Py_GetVersion", b"Py_GetVersioq")
        path = tmp_path / ("nogetver%d" % i)
        path.write_bytes(data)
        paths.append(str(path))
        ambiguous = binary == DEBIAN_PY
        want.append((binary, -errno.ENOTSUP if ambiguous else 1,
                     [0, 0, 0] if ambiguous else version))
    for det, (binary, rc, version) in zip(run_detect(*paths), want):
        assert det["rc"] == rc, (binary, det)
        assert [det["major"], det["minor"], det["micro"]] == version, (binary, det)
        assert det["runtime"] == expected_binary(binary)["runtime"]


SYNTH = r"""
#include <stdio.h>
char _PyRuntime[256];
void _PyEval_EvalFrameDefault(void) { __asm__ volatile(""); }
char PyCode_Type[64], PyUnicode_Type[64], PyBytes_Type[64];
/* unicodedata's UCD version string, a decoy candidate in .rodata */
const char ucd_decoy[] = "3.2.0";
static char version[250];
__attribute__((noinline)) const char *Py_GetBuildInfo(void)
{
	return ucd_decoy + (_PyRuntime[0] & 1);
}
__attribute__((noinline)) const char *Py_GetCompiler(void)
{
	return (const char *)PyCode_Type;
}
const char *Py_GetVersion(void)
{
	snprintf(version, sizeof(version), "%.80s (%.80s) %.80s", PY_VERSION,
		 Py_GetBuildInfo(), Py_GetCompiler());
	return version;
}
#ifdef HEX
const unsigned long Py_Version = HEX;
#endif
int main(void)
{
	_PyEval_EvalFrameDefault();
	puts(Py_GetVersion());
	return 0;
}
"""

EXTENSION = r"""
extern char _PyRuntime[];
extern void _PyEval_EvalFrameDefault(void);
void *ext(void) { _PyEval_EvalFrameDefault(); return _PyRuntime; }
"""


def gcc(tmp_path, name, src, *flags):
    c = tmp_path / (name + ".c")
    c.write_text(src)
    out = tmp_path / name
    subprocess.run(["gcc", "-O2", "-o", str(out), str(c), *flags], check=True)
    return str(out)


@pytest.mark.parametrize("version,want", [
    ("3.10.14+", [3, 10, 14]), ("3.9.0a1", [3, 9, 0]),
    ("3.13.0rc2", [3, 13, 0]), ("3.8.18", [3, 8, 18])])
@pytest.mark.parametrize("link", ["pie-dynsym", "nopie-symtab"])
def test_detect_synthetic(tmp_path, version, want, link):
    """Small programs with the interpreter's symbols, built here: the
    version string found through Py_GetVersion's lea (PIE) or mov $imm32
    (non-PIE) past a "3.2.0" decoy; symbols found in .dynsym (-rdynamic)
    or only in .symtab (a static-style link), none once stripped; a
    Py_Version beats the string, and an invalid one is ignored."""
    flags = ["-DPY_VERSION=\"%s\"" % version]
    flags += ["-fPIE", "-pie", "-rdynamic"] if link == "pie-dynsym" else ["-fno-pie", "-no-pie"]
    exe = gcc(tmp_path, "synth", SYNTH, *flags)
    assert subprocess.run([exe], capture_output=True, text=True).stdout.startswith(version + " (")
    hexed = gcc(tmp_path, "synth_hex", SYNTH, *flags, "-DHEX=0x030c04f0UL")
    bogus = gcc(tmp_path, "synth_bogus", SYNTH, *flags, "-DHEX=0x0UL")
    stripped = str(tmp_path / "synth_stripped")
    subprocess.run(["strip", "-o", stripped, exe], check=True)
    noget = tmp_path / "synth_noget"
    noget.write_bytes(rename_symbol(open(exe, "rb").read(), b"Py_GetVersion", b"Py_GetVersioq"))

    d_exe, d_hex, d_bogus, d_stripped, d_noget = run_detect(
        exe, hexed, bogus, stripped, str(noget))
    assert_detected(d_exe, exe, want)
    assert_detected(d_hex, hexed, [3, 12, 4])
    assert_detected(d_bogus, bogus, want)
    if link == "pie-dynsym":
        assert_detected(d_stripped, stripped, want)
    else:
        assert d_stripped["rc"] == 0, d_stripped
    # Without Py_GetVersion: the .rodata scan sees the decoy and refuses.
    assert d_noget["rc"] == -errno.ENOTSUP, d_noget
    assert d_noget["runtime"] == d_exe["runtime"]


def test_extension_importing_symbols_is_not_interpreter(tmp_path):
    """An object that only references _PyRuntime (undefined) is not one."""
    so = gcc(tmp_path, "ext.so", EXTENSION, "-shared", "-fPIC")
    assert "_PyRuntime" in subprocess.run(["nm", "-D", so], capture_output=True,
                                          text=True).stdout
    assert run_detect(so)[0]["rc"] == 0


# ---- corrupt files --------------------------------------------------------

def elf64_sections(data):
    """(e_shoff, e_shentsize, e_shnum, e_shstrndx, {name: header offset})."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    strtab_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    names = {}
    for i in range(shnum):
        h = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", data, h)
        end = data.index(b"\0", strtab_off + name_off)
        names[data[strtab_off + name_off:end].decode()] = h
    return shoff, shentsize, shnum, shstrndx, names


def corrupt_variants(src, tmp_path, prefix):
    """Copies of @src broken in targeted ways; yields (path, truncated)."""
    data = open(src, "rb").read()
    size = len(data)
    shoff, shentsize, shnum, _, names = elf64_sections(data)
    out = []

    def put(tag, blob, truncated=False):
        p = tmp_path / ("%s-%s" % (prefix, tag))
        p.write_bytes(blob)
        out.append((str(p), truncated))

    for cut in (0, 3, 4, 16, 63, 64, 4096, size // 2, shoff, shoff + shentsize * (shnum // 2),
                size - 1):
        put("trunc%d" % cut, data[:cut], True)

    def patch(tag, pos, fmt, value):
        b = bytearray(data)
        struct.pack_into(fmt, b, pos, value)
        put(tag, bytes(b))

    patch("shoff-huge", 0x28, "<Q", 2**63 - 8)
    patch("shoff-end", 0x28, "<Q", size - 10)
    patch("shnum-max", 0x3c, "<H", 0xffff)
    patch("shstrndx-bad", 0x3e, "<H", 0xfffe)
    patch("shentsize-small", 0x3a, "<H", 8)
    for sec in (".dynsym", ".dynstr", ".symtab", ".strtab", ".rodata", ".text", ".data"):
        if sec not in names:
            continue
        h = names[sec]
        t = sec.strip(".")
        patch(t + "-offset-huge", h + 0x18, "<Q", 2**62)
        patch(t + "-offset-end", h + 0x18, "<Q", size - 3)
        patch(t + "-size-huge", h + 0x20, "<Q", 2**62)
        patch(t + "-size-odd", h + 0x20, "<Q", 7)
        patch(t + "-link-bad", h + 0x28, "<I", 0xfff0)
        patch(t + "-entsize-0", h + 0x38, "<Q", 0)
        patch(t + "-addr-wrap", h + 0x10, "<Q", 2**64 - 16)
    # random bytes, and random bytes after a valid ELF header
    rnd = random.Random(1234)
    put("random", bytes(rnd.getrandbits(8) for _ in range(65536)))
    put("header-then-random", data[:64] + bytes(rnd.getrandbits(8) for _ in range(65536)))
    return out


def corrupt_set(tmp_path):
    srcs = []
    if os.path.exists(DEBIAN_PY):
        srcs.append(DEBIAN_PY)
    for minor in MINORS:
        dirs = pyenv_dirs(minor)
        if dirs:
            srcs.append(pyenv_lib(dirs[-1]))
            break
    if not srcs:
        pytest.skip("no CPython interpreter on this machine")
    out = []
    for i, src in enumerate(srcs):
        out += corrupt_variants(src, tmp_path, "c%d" % i)
    return out


def small_mutants(tmp_path, n=300):
    """Random byte flips of a small interpreter-like program (it is
    detected, so the symbol, Py_GetVersion and .rodata paths all run)."""
    exe = gcc(tmp_path, "mut_base", SYNTH, "-DPY_VERSION=\"3.10.14\"", "-fno-pie", "-no-pie")
    base = open(exe, "rb").read()
    assert run_detect(exe)[0]["rc"] == 1
    _, _, _, _, names = elf64_sections(base)
    rnd = random.Random(99)
    out = []
    hot = [0x28, 0x3a, 0x3c, 0x3e] + list(names.values())
    for i in range(n):
        b = bytearray(base)
        for _ in range(rnd.randint(1, 8)):
            if rnd.random() < 0.5:
                pos = rnd.choice(hot) + rnd.randrange(0x40)
            else:
                pos = rnd.randrange(len(b))
            if pos < len(b):
                b[pos] = rnd.getrandbits(8)
        p = tmp_path / ("mut%03d" % i)
        p.write_bytes(bytes(b))
        out.append(str(p))
    return out


def test_corrupt_files_never_crash(tmp_path):
    variants = corrupt_set(tmp_path)
    dets = run_detect(*[p for p, _ in variants])
    for (path, truncated), det in zip(variants, dets):
        assert det["rc"] in CORRUPT_RCS, det
        if truncated:
            # the section header table is gone or cut: nothing to find
            assert det["rc"] <= 0, det
    for det in run_detect(*small_mutants(tmp_path)):
        assert det["rc"] in CORRUPT_RCS, det


def test_sanitized_build(tmp_path):
    """detect.c and offsets.c under ASan/UBSan (and LeakSanitizer) on the
    real interpreters and every corrupt input."""
    exe = str(tmp_path / "test_python_detect_asan")
    build = subprocess.run(
        ["gcc", "-O1", "-g", "-std=gnu11", "-D_GNU_SOURCE", "-fno-omit-frame-pointer",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-I" + os.path.join(ROOT, "src"), "-I" + ROOT, "-o", exe,
         os.path.join(ROOT, "tests", "unit", "test_python_detect.c"),
         os.path.join(ROOT, "src", "python", "detect.c"),
         os.path.join(ROOT, "src", "python", "offsets.c"),
         os.path.join(ROOT, "src", "util", "elf_section.c"),
         os.path.join(ROOT, "src", "runtime", "elf_detect.c"),
         os.path.join(ROOT, "src", "runtime", "elf_syms.c"), "-lelf"],
        capture_output=True, text=True)
    if build.returncode != 0 and re.search(r"lib(asan|ubsan)", build.stderr):
        pytest.skip("no sanitizer runtime: " + build.stderr[-500:])
    assert build.returncode == 0, build.stderr[-2000:]   # not a skip: a missing source
    paths = [b for b, _ in interpreters_with_versions()]
    paths += [p for p, _ in corrupt_set(tmp_path)] + small_mutants(tmp_path, 100)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    p = subprocess.run([exe, *paths], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "runtime error" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr[-4000:]
    plain = run_detect(*paths)
    assert [json.loads(l) for l in p.stdout.splitlines()] == plain
    p = subprocess.run([exe, "--offsets"], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
