"""CPython stacks: the real profd over real interpreters (Debian's python3.11,
a renamed copy of it, and the pyenv builds 3.9 - 3.13 where present), read
back with Google's pprof. Expected frames come from `# @NAME` markers in the
workload scripts (tests/workloads/python/). Needs root, like profd."""
import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, run_unit, unit_program, start, stop, wait_file
from pprof_traces import comments, pprof_traces
from test_profd import run_profd

PYDIR = os.path.join(ROOT, "tests", "workloads", "python")
FREQ = "99"


def interpreters():
    """(id, path) of every CPython to test; absent ones (the path is then
    the pattern looked for) are skipped."""
    out = [("debian-3.11", "/usr/bin/python3.11")]
    for minor in (9, 10, 11, 12, 13):
        pattern = f"/root/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"
        found = sorted(glob.glob(pattern))
        out.append((f"pyenv-3.{minor}", found[-1] if found else pattern))
    return out


def test_unit_runtime_seam():
    """tests/unit/test_runtime.c: the runtime registry, frame tokens (a
    bogus native IP stays native), the enabled mask, dispatch by id."""
    r = subprocess.run(["make", "-C", ROOT, "build/tests/unit/test_runtime"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([os.path.join(ROOT, "build", "tests", "unit", "test_runtime")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and "all passed" in r.stdout, r.stdout


def test_unit_runtime_frames():
    """tests/unit/test_runtime_frames.c: the runtimes' frame tables
    (src/runtime/frames.c): each kind's fixed frames and "table full"
    counter, and the two generations' rotation rules."""
    unit_program("test_runtime_frames")
    r = run_unit("test_runtime_frames", timeout=120)
    assert "all passed" in r.stdout, r.stdout


def need(path):
    if not os.path.exists(path):
        pytest.skip(f"CPython not installed here (optional): {path}")
    return path


def markers(script):
    """{NAME: line} of the `# @NAME` markers of @script."""
    out = {}
    with open(os.path.join(PYDIR, script)) as f:
        for no, line in enumerate(f, 1):
            m = re.search(r"# @(\w+)", line)
            if m:
                out[m.group(1)] = no
    return out


def traces(pprof, paths):
    out = []
    for p in paths:
        out += pprof_traces(pprof, p, "-lines")
    return out


def script_frames(frames, script):
    """(function, line) of the frames in @script, leaf first."""
    out = []
    for f in frames:
        m = re.match(r"^(\S+) (\S+):(\d+)$", f)
        if m and os.path.basename(m.group(2)) == script:
            out.append((m.group(1), int(m.group(3))))
    return out


def worst(samples, ok, n=3):
    """The @n heaviest samples failing @ok, shortened, for assertion messages."""
    bad = sorted((s for s in samples if not ok(s)), key=lambda s: -s["value"])
    return [(s["value"], s["frames"][:12]) for s in bad[:n]]


def profile_process(profd_bin, pprof, tmp_path, argv, seconds=4, ready=None,
                    pid_only=True, **popen):
    """Start workload @argv, wait until @ready(work) returns (default: 1 s),
    profile it (--pid unless @pid_only is False) for @seconds, kill it.
    Returns (workload Popen, samples as pprof -traces -lines shows them,
    profile paths)."""
    work = start(argv, **popen)
    try:
        if ready:
            ready(work)
        else:
            time.sleep(1.0)
        args = ["--duration", str(seconds), "--sampling-frequency", FREQ]
        if pid_only:
            args += ["--pid", str(work.pid)]
        rc, err, paths = run_profd(profd_bin, tmp_path, *args)
    finally:
        stop(work)
    assert rc == 0, err
    return work, traces(pprof, paths), paths


@pytest.fixture(params=interpreters() + [("renamed-3.11", "renamed")],
                ids=lambda x: x[0])
def python(request, tmp_path):
    name, path = request.param
    if path == "renamed":
        # a renamed copy: recognised by its symbols, not its name
        path = str(tmp_path / "interp")
        shutil.copy("/usr/bin/python3.11", path)
    return need(path)


def test_exact_python_stacks_per_thread(profd_bin, pprof, python, tmp_path):
    """Three threads under known chains (5 functions; recursion 50 deep;
    main): >= 90 % of each thread's samples show exactly its Python frames,
    with the executing lines."""
    mk = markers("stacks.py")
    want = {
        "chain": [("chain_e", mk["chain_e"]), ("chain_d", mk["chain_d"]),
                  ("chain_c", mk["chain_c"]), ("chain_b", mk["chain_b"]),
                  ("chain_a", mk["chain_a"]), ("run_chain", mk["run_chain"])],
        "recurse": [("recurse", mk["recurse_hot"])] + [("recurse", mk["recurse"])] * 50 +
                   [("run_recurse", mk["run_recurse"])],
        "main": [("main_work", mk["main_work"]), ("main", mk["main"]),
                 ("<module>", mk["module"])],
    }
    tids_file = str(tmp_path / "tids.json")
    _, samples, _ = profile_process(profd_bin, pprof, tmp_path,
                                    [python, os.path.join(PYDIR, "stacks.py"), tids_file],
                                    ready=lambda w: wait_file(tids_file))
    tids = json.load(open(tids_file))
    for role, expect in want.items():
        mine = [s for s in samples if s["labels"].get("tid") == str(tids[role])]
        total = sum(s["value"] for s in mine)
        good = 0
        for s in mine:
            got = script_frames(s["frames"], "stacks.py")
            # the thread body closure is called from threading's frames
            got = [f for f in got if "body" not in f[0]]
            if got == expect:
                good += s["value"]
        assert total >= 20, f"{role}: only {total} samples"
        assert good >= 0.9 * total, (
            f"{role}: {good}/{total} samples with the exact Python stack; e.g. " +
            repr([script_frames(s["frames"], "stacks.py") for s in mine][:3]))
    # Python frames sit where the interpreter loop was: the thread's
    # bootstrap (threading.py) is below the script's frames, and native
    # thread start below that.
    chain = [s for s in samples if s["labels"].get("tid") == str(tids["chain"])]
    merged = [s for s in chain if any(f.startswith("chain_e ") for f in s["frames"])]
    for s in merged:
        names = [f.split()[0] for f in s["frames"]]
        assert "_PyEval_EvalFrameDefault" not in names, names
        if "start_thread" in names:
            assert names.index("run_chain") < names.index("start_thread")


def test_python_calls_native_calls_python(profd_bin, pprof, tmp_path):
    """ctypes + libc qsort with a Python comparator: Python (sort_all) ->
    native qsort -> Python (compare), in that order on one stack."""
    mk = markers("qsort_cb.py")
    _, samples, _ = profile_process(profd_bin, pprof, tmp_path,
                                    ["/usr/bin/python3.11", os.path.join(PYDIR, "qsort_cb.py")])
    total = sum(s["value"] for s in samples)
    good = 0
    for s in samples:
        names = [f.split()[0] for f in s["frames"]]
        if "compare" not in names or "sort_all" not in names:
            continue
        c, top = names.index("compare"), names.index("sort_all")
        between = names[c + 1:top]
        if any(re.search(r"qsort|msort", n) for n in between) and \
                ("compare", mk["compare"]) in script_frames(s["frames"], "qsort_cb.py") and \
                ("sort_all", mk["sort_all"]) in script_frames(s["frames"], "qsort_cb.py"):
            good += s["value"]
    assert total >= 100, total
    assert good >= 0.7 * total, f"{good}/{total} samples show sort_all -> qsort -> compare"


def austin_weights(out):
    """Self time per function from austin's collapsed output."""
    w = {}
    for line in out.splitlines():
        parts = line.rsplit(" ", 1)
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        frames = [f for f in parts[0].split(";") if f.endswith(")") and " (" in f]
        if frames:
            name = frames[-1].split(" (")[0]
            w[name] = w.get(name, 0) + int(parts[1])
    return w


def test_same_hot_functions_as_austin(profd_bin, pprof, tmp_path):
    """austin (Debian's, 1.0.1: CPython <= 3.9) and profd on the same script
    with functions of 50/30/15/5 % weight: the same order of weight."""
    py = need(next(p for n, p in interpreters() if n == "pyenv-3.9"))
    if not shutil.which("austin"):
        pytest.skip("austin not installed")
    script = os.path.join(PYDIR, "weights.py")
    spin_callers = ["heavy", "medium", "light", "tiny"]

    a = subprocess.run(["austin", "-i", "1000", py, script, "6"],
                       capture_output=True, text=True, timeout=60)
    aw = {}
    for line in a.stdout.splitlines():
        for fn in spin_callers:
            if f";{fn} (" in line and line.rsplit(" ", 1)[-1].isdigit():
                aw[fn] = aw.get(fn, 0) + int(line.rsplit(" ", 1)[-1])
    assert all(aw.get(f, 0) > 0 for f in spin_callers), (aw, a.stderr[-500:])

    _, samples, _ = profile_process(profd_bin, pprof, tmp_path, [py, script, "60"], seconds=6)
    pw = {}
    for s in samples:
        names = [f.split()[0] for f in s["frames"]]
        for fn in spin_callers:
            if fn in names:
                pw[fn] = pw.get(fn, 0) + s["value"]
    order_a = sorted(spin_callers, key=lambda f: -aw.get(f, 0))
    order_p = sorted(spin_callers, key=lambda f: -pw.get(f, 0))
    assert order_a == spin_callers, f"austin: {aw}"
    assert order_p == order_a, f"profd {pw} vs austin {aw}"


def lifecycle(profd_bin, pprof, tmp_path, mode, *extra):
    """lifecycle.py MODE profiled system-wide (a fork's child is not --pid)."""
    work, samples, _ = profile_process(
        profd_bin, pprof, tmp_path,
        ["/usr/bin/python3.11", os.path.join(PYDIR, "lifecycle.py"), mode, *extra],
        seconds=3, pid_only=False)
    return work, samples


def test_forked_child_has_python_stacks(profd_bin, pprof, tmp_path):
    mk = markers("lifecycle.py")
    child_file = str(tmp_path / "child")
    work, samples = lifecycle(profd_bin, pprof, tmp_path, "fork", child_file)
    child = open(child_file).read().strip()
    want = [("spin", mk["spin"]), ("forked_work", mk["forked_work"])]
    def ok(s):
        return script_frames(s["frames"], "lifecycle.py")[:2] == want
    for pid in (str(work.pid), child):
        mine = [s for s in samples if s["labels"].get("pid") == pid]
        good = sum(s["value"] for s in mine if ok(s))
        total = sum(s["value"] for s in mine)
        assert total >= 20 and good >= 0.9 * total, (pid, good, total, worst(mine, ok))


def test_short_lived_forked_children(profd_bin, pprof, tmp_path):
    """Children that live 30 ms: their frames are named from the parent's
    copies of the code objects (fork copied them), not left unknown. (A
    child's first samples, before profd read its maps, have no Python
    frames at all: those are left out here.)"""
    mk = markers("lifecycle.py")
    pids_file = tmp_path / "children"
    work, samples = lifecycle(profd_bin, pprof, tmp_path, "forkshort", str(pids_file))
    children = set(pids_file.read_text().split())
    kids = [s for s in samples if s["labels"].get("pid") in children and
            any(f.startswith("[python:") or ".py:" in f for f in s["frames"])]
    want = [("spin", mk["spin"]), ("short_child", mk["short_child"])]

    def ok(s):
        return script_frames(s["frames"], "lifecycle.py")[:2] == want
    good = sum(s["value"] for s in kids if ok(s))
    total = sum(s["value"] for s in kids)
    unknown = sum(s["value"] for s in kids
                  if "[python: unknown code object]" in s["frames"])
    assert total >= 20 and good >= 0.8 * total, (good, total, worst(kids, ok))
    assert unknown <= 0.05 * total, (unknown, total, worst(kids, ok))


def test_asyncio_coroutines(profd_bin, pprof, tmp_path):
    mk = markers("lifecycle.py")
    work, samples = lifecycle(profd_bin, pprof, tmp_path, "asyncio")
    mine = [s for s in samples if s["labels"].get("pid") == str(work.pid)]
    want = [("spin", mk["spin"]), ("coro_inner", mk["coro_inner"]),
            ("coro_outer", mk["coro_outer"])]
    def ok(s):
        return script_frames(s["frames"], "lifecycle.py")[:3] == want
    good = sum(s["value"] for s in mine if ok(s))
    total = sum(s["value"] for s in mine)
    assert total >= 20 and good >= 0.8 * total, (good, total, worst(mine, ok))
    # the event loop's frames (asyncio/events.py) are below the coroutines
    loop = [s for s in mine if any("asyncio" in f and "events.py" in f
                                   for f in s["frames"])]
    assert sum(s["value"] for s in loop) >= 0.8 * total


def test_exec_into_python(profd_bin, pprof, tmp_path):
    """A shell that execs Python after profd started: its stacks are Python."""
    mk = markers("lifecycle.py")
    argv = ["/usr/bin/python3.11", os.path.join(PYDIR, "lifecycle.py"), "exec"]
    prof = subprocess.Popen([profd_bin, "--output-dir", str(tmp_path), "--duration", "4",
                             "--sampling-frequency", FREQ],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)	# profd is sampling before the exec happens
    work = start(argv)
    try:
        _, err = prof.communicate(timeout=60)
    finally:
        stop(work)
    assert prof.returncode == 0, err
    samples = traces(pprof, sorted(glob.glob(str(tmp_path / "cpu-*.pb.gz"))))
    mine = [s for s in samples if s["labels"].get("pid") == str(work.pid)]
    want = [("spin", mk["spin"]), ("after_exec", mk["after_exec"])]

    def ok(s):
        return script_frames(s["frames"], "lifecycle.py")[:2] == want
    good = sum(s["value"] for s in mine if ok(s))
    total = sum(s["value"] for s in mine)
    assert total >= 20 and good >= 0.8 * total, (good, total, worst(mine, ok))


def test_deep_python_stack_is_truncated(profd_bin, pprof, tmp_path):
    """300 Python frames: the 128 innermost are kept, in order, and the
    stack ends in a counted "[python: truncated]" frame."""
    mk = markers("lifecycle.py")
    work, samples = lifecycle(profd_bin, pprof, tmp_path, "deep")
    mine = [s for s in samples if s["labels"].get("pid") == str(work.pid)]
    want = [("spin", mk["spin"]), ("deep", mk["deep_hot"])] + [("deep", mk["deep"])] * 126
    total = sum(s["value"] for s in mine)
    good = 0
    for s in mine:
        if script_frames(s["frames"], "lifecycle.py") != want:
            continue
        names = [f.split(" ")[0] for f in s["frames"]]
        last = max(i for i, n in enumerate(names) if n == "deep")
        if s["frames"][last + 1] == "[python: truncated]":
            good += s["value"]
    assert total >= 20 and good >= 0.9 * total, (good, total)
    raw = "".join(comments(pprof, p) for p in sorted(glob.glob(str(tmp_path / "cpu-*.pb.gz"))))
    n = sum(int(m) for m in re.findall(r"partial\.python_stack_truncated=(\d+)", raw))
    assert n >= good, raw


BROKEN = r"""
import ctypes, sys
def spin(n):
    x = 0
    for i in range(n): x = (x * 31 + i) % 1000003
    return x
def victim():
    # this frame's caller link -> unmapped memory (3.11 layout:
    # PyFrameObject.f_frame at 24, _PyInterpreterFrame.previous at 48)
    iframe = ctypes.c_void_p.from_address(id(sys._getframe()) + 24).value
    ctypes.c_void_p.from_address(iframe + 48).value = 0x1000
    print("ready", flush=True)
    while True:
        spin(20000)
def outer():
    victim()
outer()
"""


def test_unreadable_frame_is_counted(profd_bin, pprof, tmp_path):
    """A frame chain pointing at unmapped memory ends in a counted
    "[python: unreadable frame]" frame below the frames that were read."""
    script = tmp_path / "broken.py"
    script.write_text(BROKEN)
    def ready(w):
        assert w.stdout.readline().strip() == "ready"
    _, samples, paths = profile_process(profd_bin, pprof, tmp_path,
                                        ["/usr/bin/python3.11", str(script)], seconds=3,
                                        ready=ready, stdout=subprocess.PIPE, text=True)
    total = sum(s["value"] for s in samples)
    good = 0
    for s in samples:
        names = [f.split()[0] for f in s["frames"]]
        assert "outer" not in names, names	# never read past the bad link
        if "victim" in names:
            v = names.index("victim")
            if s["frames"][v + 1:v + 2] == ["[python: unreadable frame]"]:
                good += s["value"]
    assert total >= 20 and good >= 0.9 * total, (good, total)
    raw = "".join(comments(pprof, p) for p in paths)
    n = sum(int(m) for m in re.findall(r"partial\.python_frame_read_error=(\d+)", raw))
    assert n >= good, raw


HANGING = r"""
# The caller's code object pointer -> a userfaultfd region nobody serves:
# reading it from another process (process_vm_readv) sleeps until the
# fault is served, i.e. for ever. 3.11 layout: PyFrameObject.f_frame at
# 24, _PyInterpreterFrame.f_code at 32.
import ctypes, fcntl, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(323, os.O_CLOEXEC | os.O_NONBLOCK)
assert fd >= 0, ctypes.get_errno()
fcntl.ioctl(fd, 0xc018aa3f, bytearray(struct.pack("QQQ", 0xAA, 0, 0)))	# UFFDIO_API
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
region = libc.mmap(None, 1 << 20, 3, 0x22, -1, 0)
fcntl.ioctl(fd, 0xc020aa00, bytearray(struct.pack("QQQQ", region, 1 << 20, 1, 0)))
def spin(n):
    x = 0
    for i in range(n): x = (x * 31 + i) % 1000003
    return x
def victim(caller):
    ctypes.c_uint64.from_address(caller + 32).value = region + 0x1000
    print("ready", flush=True)
    while True:
        spin(20000)
def caller():
    victim(ctypes.c_uint64.from_address(id(sys._getframe()) + 24).value)
caller()
"""


def test_hanging_process_memory_does_not_stall_profd(profd_bin, pprof, tmp_path):
    """A frame whose code object lies in a userfaultfd region nobody
    serves: profd abandons the read (counted), keeps sampling every
    interval, and exits on time."""
    script = tmp_path / "hang.py"
    script.write_text(HANGING)

    def ready(w):
        assert w.stdout.readline().strip() == "ready"
    start_t = time.monotonic()
    _, samples, paths = profile_process(profd_bin, pprof, tmp_path,
                                        ["/usr/bin/python3.11", str(script)], seconds=4,
                                        ready=ready, stdout=subprocess.PIPE, text=True)
    assert time.monotonic() - start_t < 30
    raw = "".join(comments(pprof, p) for p in paths)
    n = sum(int(m) for m in re.findall(r"partial\.python_read_timeout=(\d+)", raw))
    assert n >= 1, raw
    names = [[f.split(" ")[0] for f in s["frames"]] for s in samples]
    total = sum(s["value"] for s in samples)
    good = sum(s["value"] for s, f in zip(samples, names)
               if "victim" in f and "[python:" in " ".join(f))
    assert total >= 100, total		# sampling went on: ~4 s at 99 Hz
    assert good >= 0.8 * total, (good, total)
