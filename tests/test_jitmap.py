"""JIT code named from the files JITs write for perf (src/symbol/jit_*.c):
/tmp/perf-PID.map and jit-PID.dump, read by the real profd over real
processes, read back with Google's pprof.

- node 20 with --perf-basic-prof (perf map) and --perf-prof (jitdump) runs
  tests/workloads/jit/hot.js, which prints its own call chain as V8 sees it
  (new Error().stack) at the hot spot: the leaf-side JS frames of profd's
  stacks must be that chain.
- tests/workloads/jitgen.c writes code into anonymous PROT_EXEC memory and
  announces it: in a perf map, or in a jitdump where code A is unloaded and
  code B loaded at the same address, then B moved: every thread's samples
  keep the name of the code that ran then (never the other's).
- hostile perf maps (garbage, a line of 1 MiB, overlapping ranges, a FIFO,
  a symlink to /dev/zero, another user's file, a file that grows
  throughout): counted, never a crash, hang or unbounded memory.
Needs root, like profd."""
import collections
import os
import re
import shutil
import subprocess
import threading
import time

import pytest

from conftest import ROOT, start, stop
from pprof_traces import comments, pprof_traces
from test_dwarf import finish_profd, start_profd
from test_profd import kernel_names

NODE = shutil.which("node")
HOT = os.path.join(ROOT, "tests", "workloads", "jit", "hot.js")


@pytest.fixture(scope="module")
def jitgen(tmp_path_factory):
    dst = str(tmp_path_factory.mktemp("jitgen") / "jitgen")
    subprocess.run(["gcc", "-O1", "-g", "-Wall", "-pthread", "-o", dst,
                    os.path.join(ROOT, "tests", "workloads", "jitgen.c")], check=True)
    return dst


def counter(paths, pprof, name):
    total = 0
    for p in paths:
        m = re.search(rf"\.{name}=(\d+)", comments(pprof, p))
        total += int(m.group(1)) if m else 0
    return total


def of_pid(pprof, paths, pid, *extra):
    out = []
    for p in paths:
        out += [s for s in pprof_traces(pprof, p, *extra)
                if s["labels"].get("pid") == str(pid)]
    return out


def profile(profd_bin, tmp_path, pid, seconds, go=None, extra=()):
    """profd over @pid for @seconds (and @extra flags); touches @go once
    it samples."""
    prof, head = start_profd(profd_bin, tmp_path / "out", "--pid", str(pid),
                             "--no-gpu", "--duration", str(seconds), *extra)
    if go:
        open(go, "w").close()
    rc, err, paths = finish_profd(prof, head, str(tmp_path / "out"))
    assert rc == 0 and paths, err
    return err, paths


# --- node: the JS call chain V8 reports ------------------------------------

JS_FRAME = re.compile(r"^JS:[*~^]?(\S*) ")


def js_names(frames):
    """The function names of the leading run of JS frames (perf map names
    "JS:*inner /path/hot.js:2:15"; "" for an anonymous function; None for
    a JIT frame left unnamed, "[[jit]]": code that changed at the time)."""
    out = []
    for f in frames:
        m = JS_FRAME.match(f)
        if not m and f != "[[jit]]":
            break
        out.append(m.group(1) if m else None)
    return out


@pytest.mark.parametrize("flag", ["--perf-basic-prof", "--perf-prof"])
def test_node_js_frames(profd_bin, pprof, tmp_path, flag):
    """node 20 names its JIT code in /tmp/perf-PID.map (--perf-basic-prof)
    or jit-PID.dump in its cwd (--perf-prof): samples whose leaf is JS
    code show V8's own chain (inner, middle, outer) from the leaf; at
    least half the main thread's samples have that leaf; the jitdump's
    DEBUG_INFO gives the frames their script file. The V8 unwinder is
    left out (--tracers native): with it, JS frames are its own (named
    from the heap, tests/test_v8_frames.py); these files are the
    fallback for any JIT."""
    if not NODE:
        pytest.skip("node not installed")
    argv = [NODE, flag, "--no-turbo-inlining", HOT, "60"]
    work = start(argv + (["flush"] if flag == "--perf-prof" else []),
                 cwd=str(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        line = work.stdout.readline()
        assert line.startswith("STACK "), line
        expected = line.split()[1].split(",")
        assert expected == ["inner", "middle", "outer"], expected
        if flag == "--perf-prof":
            line = work.stdout.readline()
            assert line.startswith("FLUSHED "), line
        else:
            time.sleep(1.0)     # past the first tiers: the loop is optimized
        err, paths = profile(profd_bin, tmp_path, work.pid, 4,
                             extra=("--tracers", "native"))
    finally:
        stop(work)
    samples = [s for s in of_pid(pprof, paths, work.pid)
               if s["labels"].get("thread_name") == "node"]
    total = sum(s["value"] for s in samples)
    named = 0
    for s in samples:
        names = js_names(s["frames"])
        if not names or names[0] not in expected:
            continue
        k = expected.index(names[0])
        got = names[:3 - k]
        # an unnamed frame may stand for one; a name is never another's
        assert all(g in (None, e) for g, e in zip(got, expected[k:])) and \
            len(got) == 3 - k, f"{s['frames'][:6]}"
        named += s["value"] if None not in got else 0
    print(flag, "named", named, "of", total, "\n", err[-400:])
    assert total and named * 2 >= total, f"{named} of {total} named\n{err}"
    if flag == "--perf-prof":
        lines = of_pid(pprof, paths, work.pid, "-lines")
        files = {f.split()[1].split(":")[0] for s in lines for f in s["frames"]
                 if f.startswith("JS:*inner ") and len(f.split()) > 2}
        assert HOT in files, files


# --- a C program's own JIT: perf map, jitdump with reuse and a move --------

def start_jitgen(jitgen, tmp_path, mode, seconds):
    go = str(tmp_path / "go")
    work = start([jitgen, mode, str(seconds), go], cwd=str(tmp_path),
                 stdout=subprocess.PIPE, text=True)
    line = work.stdout.readline().split()
    assert line and line[0] == "ready", line
    return work, go, int(line[2], 16)


def leaves_by_thread(samples):
    """{thread name: {user leaf: samples}}; kernel frames on top (an
    interrupt or syscall the sample caught) are passed over."""
    ks = kernel_names()
    out = {}
    for s in samples:
        t = s["labels"].get("thread_name")
        out.setdefault(t, {})
        user = [f for f in s["frames"] if f not in ks]
        leaf = user[0] if user else s["frames"][0]
        out[t][leaf] = out[t].get(leaf, 0) + s["value"]
    return out


def test_c_perf_map(profd_bin, pprof, jitgen, tmp_path):
    """Code in anonymous executable memory announced in /tmp/perf-PID.map
    is named as written there, under the mapping "[jit]"."""
    work, go, _ = start_jitgen(jitgen, tmp_path, "map", 3)
    try:
        err, paths = profile(profd_bin, tmp_path, work.pid, 3, go)
    finally:
        stop(work)
        os.unlink(f"/tmp/perf-{work.pid}.map")
    by = leaves_by_thread(of_pid(pprof, paths, work.pid)).get("jitrun", {})
    print(by)
    assert by.get("jitgen_map_fn", 0) * 10 >= sum(by.values()) * 8, f"{by}\n{err}"
    raw = subprocess.run([pprof, "-raw", "-symbolize=none", *paths], capture_output=True,
                         text=True, check=True).stdout
    assert re.search(r"\[jit\]", raw), raw[-2000:]


def test_leaf_at_entry_keeps_its_caller(profd_bin, pprof, jitgen, tmp_path):
    """JIT code has no unwind rows: profd walks it by frame pointers. A
    leaf caught at its first instruction (push rbp), right after it
    (mov rbp,rsp) or at its ret has not made its frame yet or has
    dropped it: rbp is still its caller's, and a frame-pointer step would
    skip the caller. jitgen's leaf is nothing but those instructions,
    called in a loop by jitgen_outer: every sample in the leaf has
    jitgen_outer as its caller, none skips it to outer's own caller
    (run_for); the leaf's samples at entry are counted
    (stat.unwind_leaf_entry), none of their callers failed the check
    (partial.unwind_leaf_entry_unverified)."""
    work, go, _ = start_jitgen(jitgen, tmp_path, "entry", 3)
    try:
        err, paths = profile(profd_bin, tmp_path, work.pid, 3, go)
    finally:
        stop(work)
        os.unlink(f"/tmp/perf-{work.pid}.map")
    ks = kernel_names()
    callers = collections.Counter()
    for s in of_pid(pprof, paths, work.pid):
        if s["labels"].get("thread_name") != "jitrun":
            continue
        user = [f for f in s["frames"] if f not in ks]
        if user and user[0] == "jitgen_leaf":
            callers[user[1] if len(user) > 1 else None] += s["value"]
    entry = counter(paths, pprof, "unwind_leaf_entry")
    print(callers, entry, counter(paths, pprof, "stack_copies"))
    assert sum(callers.values()) >= 20, f"{callers}\n{err}"
    assert set(callers) == {"jitgen_outer"}, callers
    assert entry >= 10, err
    assert counter(paths, pprof, "unwind_leaf_entry_unverified") == 0, err


def test_c_jitdump_reuse_and_move(profd_bin, pprof, jitgen, tmp_path):
    """jitdump: A runs at X (thread jitA), is unloaded; B is loaded at the
    same X (jitB), then moved to Y (jitM). Each thread's samples are named
    by what ran then: jitA never B, jitB and jitM never A (samples in the
    time bin of the switch stay unnamed, counted as jit_ambiguous); the
    DEBUG_INFO lines follow (gen/a.src:10-11, gen/b.src:20-21, moved)."""
    work, go, _ = start_jitgen(jitgen, tmp_path, "dump", 2.5)
    try:
        err, paths = profile(profd_bin, tmp_path, work.pid, 10, go)
        work.wait(timeout=30)
    finally:
        stop(work)
    samples = of_pid(pprof, paths, work.pid, "-lines")
    by = leaves_by_thread(samples)
    print(by, counter(paths, pprof, "jit_ambiguous"))
    a = {k: v for k, v in by.get("jitA", {}).items() if k.startswith("jitgen_code")}
    b = {k: v for k, v in by.get("jitB", {}).items() if k.startswith("jitgen_code")}
    m = {k: v for k, v in by.get("jitM", {}).items() if k.startswith("jitgen_code")}
    assert set(a) <= {"jitgen_code_A gen/a.src:10", "jitgen_code_A gen/a.src:11"}, a
    assert set(b) <= {"jitgen_code_B gen/b.src:20", "jitgen_code_B gen/b.src:21"}, b
    assert set(m) <= {"jitgen_code_B gen/b.src:20", "jitgen_code_B gen/b.src:21"}, m
    for name, got in (("jitA", a), ("jitB", b), ("jitM", m)):
        total = sum(by.get(name, {}).values())
        assert total and sum(got.values()) * 2 >= total, f"{name}: {by.get(name)}\n{err}"


def test_c_jitdump_written_late(profd_bin, pprof, jitgen, tmp_path):
    """A JIT that buffers its jitdump (V8: a stdio stream, written when
    the buffer is full) writes a LOAD only after its code ran; here after
    the code stopped running, so no sample of it comes after the write to
    ask for a read. The interval's build reads the files once more first:
    thread jitL's samples are named jitgen_code_L (the record's time is
    before they ran), never anything else."""
    work, go, _ = start_jitgen(jitgen, tmp_path, "late", 2.5)
    try:
        err, paths = profile(profd_bin, tmp_path, work.pid, 5, go)
    finally:
        stop(work)
    by = leaves_by_thread(of_pid(pprof, paths, work.pid)).get("jitL", {})
    print(by, counter(paths, pprof, "jit_unknown"))
    total = sum(by.values())
    assert not any(k.startswith("jitgen") and k != "jitgen_code_L" for k in by), by
    assert total and by.get("jitgen_code_L", 0) * 2 >= total, f"{by}\n{err}"


def test_c_perf_map_past_the_budget(profd_bin, pprof, jitgen, tmp_path):
    """A perf map that outgrows profd's JIT budget: the entries past it
    are dropped (counted), and code written at an address after that is
    never named by what was there before: thread jitB (code B at A's
    address, its line dropped) has no frame named jitgen_flood_A."""
    work, go, _ = start_jitgen(jitgen, tmp_path, "flood", 2.0)
    try:
        err, paths = profile(profd_bin, tmp_path, work.pid, 6, go)
    finally:
        stop(work)
    by = leaves_by_thread(of_pid(pprof, paths, work.pid))
    print(by, counter(paths, pprof, "jit_entries_dropped"))
    assert by.get("jitA", {}).get("jitgen_flood_A", 0) > 0, f"{by}\n{err}"
    assert sum(by.get("jitB", {}).values()) > 0, f"{by}\n{err}"
    assert "jitgen_flood_A" not in by.get("jitB", {}), by
    assert counter(paths, pprof, "jit_entries_dropped") > 0, err


# --- hostile perf maps -------------------------------------------------------

def hostile_map(kind, path, addr):
    """Write perf map @path of @kind for code at @addr (64 bytes)."""
    if kind == "garbage":
        with open(path, "wb") as f:
            f.write(os.urandom(4096).replace(b"\n", b"x") + b"\n")
            f.write(b"not a line\n" + b"A" * (1 << 20) + b"\n")       # 1 MiB line
            f.write(b"%x 0 empty\n%x ffffffffffffffff huge\n" % (addr, addr))
            f.write(b"%x 40 \x01\x02bad name\n" % addr)
            f.write(b"%x 40 earlier_overlapped\n" % addr)
            f.write(b"%x 60 jitgen_hostile_fn\n" % (addr - 0x10))    # later wins
            f.write(b"%x 40 trailing_no_newline" % addr)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink("/dev/zero", path)
    elif kind == "other_user":
        with open(path, "w") as f:
            f.write("%x 40 not_its_own\n" % addr)
        os.chown(path, 12345, 12345)


@pytest.mark.parametrize("kind", ["garbage", "fifo", "symlink", "other_user"])
def test_hostile_perf_map(profd_bin, pprof, jitgen, tmp_path, kind):
    """A hostile /tmp/perf-PID.map never crashes or hangs profd: garbage
    lines are counted (jitmap_parse_errors) and the valid line that comes
    last names the code; a FIFO, a symlink to /dev/zero or another user's
    file is not read (jit_files_rejected) and names nothing."""
    work, go, addr = start_jitgen(jitgen, tmp_path, "anon", 3)
    path = f"/tmp/perf-{work.pid}.map"
    try:
        hostile_map(kind, path, addr)
        err, paths = profile(profd_bin, tmp_path, work.pid, 3, go)
    finally:
        stop(work)
        os.unlink(path)
    by = leaves_by_thread(of_pid(pprof, paths, work.pid)).get("jitrun", {})
    print(kind, by)
    assert sum(by.values()), err
    if kind == "garbage":
        assert counter(paths, pprof, "jitmap_parse_errors") >= 5, err
        assert by.get("jitgen_hostile_fn", 0) * 10 >= sum(by.values()) * 8, by
    else:
        assert counter(paths, pprof, "jit_files_rejected") >= 1, err
        assert not any(k.startswith(("jitgen", "not_its")) for k in by), by


def peak_rss_mib(proc):
    """Poll @proc's VmHWM until it exits; its highest value in MiB, as a
    one-element list (0.0 if never read)."""
    last = 0.0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        last = max(last, int(line.split()[1]) / 1024)
        except OSError:
            break
        time.sleep(0.2)
    return [last]


def test_growing_perf_map_is_bounded(profd_bin, pprof, jitgen, tmp_path):
    """A perf map that grows throughout the run (~15 MB/s of new lines)
    costs profd bounded memory: its RSS stays under 400 MiB, entries past
    the budget are counted as dropped (jit_entries_dropped), and no frame
    is misnamed: once lines were dropped, an address where a dropped line's
    code may lie is left unnamed from then on (jit_unknown), never named by
    an earlier line; the hot function, elsewhere, keeps its name."""
    work, go, addr = start_jitgen(jitgen, tmp_path, "anon", 6)
    path = f"/tmp/perf-{work.pid}.map"
    stop_flag = threading.Event()

    def grow():
        with open(path, "w") as f:
            f.write("%x 40 jitgen_grow_fn\n" % addr)
            i = 0
            while not stop_flag.is_set():
                f.write("".join("%x 10 filler_%d_%s\n" % (0x10000000 + (i + k) * 16, i + k,
                                                         "x" * 40) for k in range(2000)))
                i += 2000
                time.sleep(0.01)    # ~15 MB/s: past the budget within the run
    t = threading.Thread(target=grow)
    t.start()
    hwm = []
    try:
        prof, head = start_profd(profd_bin, tmp_path / "out", "--pid", str(work.pid),
                                 "--no-gpu", "--duration", "6")
        open(go, "w").close()
        # profd's own peak RSS, read while it runs (getrusage's children
        # maximum would be that of any child this test process ever waited
        # for: a JVM of an earlier test)
        watch = threading.Thread(target=lambda: hwm.extend(peak_rss_mib(prof)))
        watch.start()
        rc, err, paths = finish_profd(prof, head, str(tmp_path / "out"))
        watch.join()
        assert rc == 0 and paths, err
    finally:
        stop_flag.set()
        t.join()
        stop(work)
        size = os.path.getsize(path)
        os.unlink(path)
    rss_mib = max(hwm)
    by = leaves_by_thread(of_pid(pprof, paths, work.pid)).get("jitrun", {})
    print("file", size >> 20, "MiB; profd VmHWM", rss_mib, "MiB;", by,
          "dropped", counter(paths, pprof, "jit_entries_dropped"))
    assert rss_mib < 400, rss_mib
    assert counter(paths, pprof, "jit_entries_dropped") > 0, err
    # the loop's own code (mono_ns, the vDSO's clock) is not JIT code
    by = {k: v for k, v in by.items() if k in ("jitgen_grow_fn", "[[jit]]") or
          k.startswith("filler_") or k.startswith("0x")}
    assert set(by) <= {"jitgen_grow_fn", "[[jit]]"}, by
    # the dropped lines' code lies apart from the hot function's: the
    # files are still parsed past the budget to learn where (the hull), so
    # the hot function keeps its name while profd keeps up with the file
    unnamed = by.get("[[jit]]", 0)
    assert by.get("jitgen_grow_fn", 0) * 2 >= sum(by.values()), by
    # each unnamed frame is counted: unknown past the drop, or ambiguous
    # (a line read between two reads) before it
    assert not unnamed or (counter(paths, pprof, "jit_unknown") +
                           counter(paths, pprof, "jit_ambiguous")) > 0, err


def test_map_read_in_parts_never_misnames(profd_bin, pprof, jitgen, tmp_path):
    """A perf map bigger than one read (JIT_READ_MAX, 16 MiB) whose first
    line names the hot code's address "jitgen_old_fn" and whose last line,
    ~100 MiB on, names it again "jitgen_true_fn": both were in the file
    before profd read any of it, so the last line may hold from the start
    (perf map lines carry no time). Read over several refreshes, the last
    line's entry must not count only from the read that reached it: no
    sample is named jitgen_old_fn (frames the two lines could both name
    are left unnamed, counted)."""
    work, go, addr = start_jitgen(jitgen, tmp_path, "anon", 6)
    path = f"/tmp/perf-{work.pid}.map"
    try:
        with open(path, "w") as f:
            f.write("%x 40 jitgen_old_fn\n" % addr)
            # lines over JIT_LINE_MAX: read and passed over (counted as
            # parse errors), so no entry is dropped for the budget
            long_line = "%x 10 %s\n" % (0x10000000, "x" * 8000)
            for _ in range(100):
                f.write(long_line * 128)
            f.write("%x 40 jitgen_true_fn\n" % addr)
        size = os.path.getsize(path)
        err, paths = profile(profd_bin, tmp_path, work.pid, 5, go)
    finally:
        stop(work)
        os.unlink(path)
    by = leaves_by_thread(of_pid(pprof, paths, work.pid)).get("jitrun", {})
    print("file", size >> 20, "MiB;", by)
    assert size > 3 * (16 << 20)
    assert counter(paths, pprof, "jit_entries_dropped") == 0, err
    assert sum(by.values()) >= 20, f"{by}\n{err}"
    assert "jitgen_old_fn" not in by, f"{by}\n{err}"
    jit = {k: v for k, v in by.items() if k.startswith("jitgen_") or k == "[[jit]]"}
    assert set(jit) <= {"jitgen_true_fn", "[[jit]]"}, by
    assert not by.get("[[jit]]") or (counter(paths, pprof, "jit_ambiguous") +
                                     counter(paths, pprof, "jit_unknown")) > 0, err
