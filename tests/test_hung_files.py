"""Files that hang or shrink under profd (issue 14, A and F).

A: a program runs from a FUSE file system whose reads past its first
megabyte hang (tests/tools/hangfs.c, libfuse3): profd keeps writing a
profile every interval with a normal program's frames named, counts the
hung program's mappings (partial.file_hung), names the file in one
warning, reports /healthz degraded, and exits within 2 s of SIGTERM while
the read still hangs.

A hung OTLP collector (accepts connections, never answers) costs at
most a second at exit: SIGTERM still exits within 2 s, with a warning
that the endpoint did not take everything.

F: a library truncated in place after its samples, before the interval
is written: its frames are still named (symbols are read when the object
is opened), never a bare mapping name that nothing counts.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ROOT
from pprof_traces import comments, pprof_traces
from test_metrics import Profd, get

WORKLOADS = os.path.join(ROOT, "tests", "workloads")


def _gcc(*args):
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", *args], check=True)


def _counter(raw, name):
    """Value of the comment @name=N (e.g. partial.file_hung) in pprof -raw output."""
    m = re.search(re.escape(name) + r"=(\d+)", raw)
    assert m, f"no {name} in the profile comments:\n{raw[-2000:]}"
    return int(m.group(1))


def _mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == str(path) for line in f)


def _profiles_keep_coming(p, out):
    """At least 3 more profiles in @out within 4.5 s (1-s intervals)."""
    before = len(glob.glob(str(out / "cpu-*.pb.gz")))
    time.sleep(4.5)
    after = len(glob.glob(str(out / "cpu-*.pb.gz")))
    assert after - before >= 3, p.stderr()


def _kill_releasing(p, trigger):
    """Kill profd @p if it still runs, releasing the hang first: a task
    exiting with a hung file open waits for the FUSE server (its FLUSH)
    to answer."""
    if p.proc.poll() is None:
        trigger.unlink(missing_ok=True)
        p.proc.kill()
        p.proc.wait()


def _sigterm_exits_promptly(p):
    """SIGTERM to profd @p: it exits 0 within 2 s (a read still hung)."""
    t0 = time.monotonic()
    p.proc.send_signal(signal.SIGTERM)
    p.proc.wait(10)
    took = time.monotonic() - t0
    p.reader.join(5)
    assert p.proc.returncode == 0, p.stderr()
    assert took < 2.0, f"SIGTERM took {took:.2f} s with a read hung\n{p.stderr()}"


@pytest.fixture
def hung_fs(tmp_path):
    """(mountpoint, trigger): /prog in the mount is a copy of the burner
    padded past 1 MiB; reads past 1 MiB hang while the trigger exists."""
    if not shutil.which("fusermount3") or subprocess.run(
            ["pkg-config", "--exists", "fuse3"]).returncode:
        pytest.fail("fuse3 and libfuse3-dev are needed: scripts/deps.sh --test")
    hangfs, burner = tmp_path / "hangfs", tmp_path / "burner"
    cflags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                            capture_output=True, text=True).stdout.split()
    _gcc("-o", str(hangfs), os.path.join(ROOT, "tests", "tools", "hangfs.c"), *cflags)
    _gcc("-o", str(burner), os.path.join(WORKLOADS, "burner.c"))
    pad = tmp_path / "pad"
    pad.write_bytes(b"\0" * (4 << 20))
    padded = tmp_path / "burner.padded"
    subprocess.run(["objcopy", "--add-section", f".pad={pad}", str(burner), str(padded)],
                   check=True)
    mnt, trigger = tmp_path / "mnt", tmp_path / "hang"
    mnt.mkdir()
    trigger.touch()
    fs = subprocess.Popen([str(hangfs), str(padded), str(trigger), str(mnt), "-f"],
                          stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not (mnt / "prog").exists():
            assert fs.poll() is None and time.monotonic() < deadline, "hangfs did not mount"
            time.sleep(0.05)
        yield mnt, trigger
    finally:
        trigger.unlink(missing_ok=True)      # release every hung read
        for _ in range(50):
            if not _mounted(mnt) or subprocess.run(
                    ["fusermount3", "-u", str(mnt)], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        else:
            subprocess.run(["umount", "-l", str(mnt)])
        fs.kill()
        fs.wait()


def test_hung_fuse_file_costs_only_its_frames(profd_bin, pprof, hung_fs, tmp_path):
    mnt, trigger = hung_fs
    normal_exe = tmp_path / "burner"
    hung = subprocess.Popen([str(mnt / "prog"), "60000"])
    normal = subprocess.Popen([str(normal_exe), "60000"])
    out = tmp_path / "out"
    out.mkdir()
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "60",
               "--profile-interval", "1", "--sampling-frequency", "99",
               "--http-address", "127.0.0.1:0"])
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://\S+)$", 20).group(1)
        p.wait_line(r"warning: reading \S*/mnt/prog .*did not finish", 30)
        # the read stays hung: profiles keep coming, one per interval
        _profiles_keep_coming(p, out)
        status, _, body = get(url + "/healthz")
        assert status == 503 and body.startswith("degraded: "), (status, body)
        _, _, metrics = get(url + "/metrics")
        m = re.search(r"^profd_file_reads_stuck (\d+)$", metrics, re.M)
        assert m and int(m.group(1)) >= 1, metrics
        assert re.search(r'^profd_partial_total\{reason="file_hung"\} [1-9]', metrics, re.M), \
            metrics
        assert os.path.exists(trigger)          # still hanging
        _sigterm_exits_promptly(p)
    finally:
        _kill_releasing(p, trigger)
        hung.kill()
        normal.kill()
        hung.wait()
        normal.wait()

    warnings = [l for l in p.lines if "did not finish" in l]
    assert len(warnings) == 1, p.stderr()
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    named = hung_samples = hung_named = file_hung = 0
    for path in paths:
        for s in pprof_traces(pprof, path):
            pid = s["labels"].get("pid")
            if pid == str(normal.pid) and "burn_inner" in s["frames"]:
                named += s["value"]
            if pid == str(hung.pid):
                hung_samples += s["value"]
                hung_named += any(f.startswith("burn_") for f in s["frames"])
        file_hung += _counter(comments(pprof, path), "partial.file_hung")
    assert named >= 100, p.stderr()          # the normal burner, named, every interval
    assert hung_samples >= 50, p.stderr()    # the hung one is sampled ...
    assert hung_named == 0                   # ... its frames unnamed ...
    assert file_hung >= 1                    # ... and counted


def test_hung_injection_library_costs_only_its_probes(profd_bin, hung_fs, tmp_path):
    """A process maps a file named like profd's CUDA/NVTX injection library
    from the hung mount (its section headers lie past the first MiB, where
    reads hang): profd, which reads a copy's probe notes before attaching,
    asks the file gate first, so the reader never blocks: profiles keep
    coming, and SIGTERM exits within 2 s while the read still hangs."""
    mnt, trigger = hung_fs
    mapper = subprocess.Popen(["/usr/bin/python3", "-c",
                               "import mmap, sys, time\n"
                               "f = open(sys.argv[1], 'rb')\n"
                               "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
                               "print('mapped', flush=True)\n"
                               "time.sleep(60)\n", str(mnt / "libprofd_inject.so")],
                              stdout=subprocess.PIPE, text=True)
    assert mapper.stdout.readline().strip() == "mapped"
    out = tmp_path / "out"
    out.mkdir()
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "60",
               "--profile-interval", "1", "--http-address", "127.0.0.1:0"])
    try:
        p.wait_line(r"sampling", 30)
        time.sleep(2)       # the start-up scan found the mapping: its read hangs
        _profiles_keep_coming(p, out)
        assert os.path.exists(trigger)          # still hanging
        _sigterm_exits_promptly(p)
    finally:
        _kill_releasing(p, trigger)
        mapper.kill()
        mapper.wait()
    assert not any("GPU probes attached" in l for l in p.lines), p.stderr()


def test_one_dead_mount_leaves_other_files_read(profd_bin, pprof, hung_fs, tmp_path):
    """20 programs run from one FUSE mount whose reads hang: the mount is
    hung as a whole after 4 blocked reads (the others hung untried, each
    named once), so a program started afterwards from a normal disk still
    gets its build ID and its frames named."""
    mnt, trigger = hung_fs
    out = tmp_path / "out"
    out.mkdir()
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "60",
               "--profile-interval", "1", "--sampling-frequency", "99",
               "--http-address", "127.0.0.1:0"])
    hung, fresh = [], None
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://\S+)$", 20).group(1)
        hung = [subprocess.Popen([str(mnt / f"prog{i}"), "60000"]) for i in range(1, 21)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            named = {m.group(1) for m in (re.search(r"(?:reading|not reading) \S*/mnt/(prog\d+)", l)
                                          for l in p.lines) if m}
            if len(named) == 20:
                break
            time.sleep(0.5)
        assert len(named) == 20, p.stderr()	# every hung file named ...
        _, _, metrics = get(url + "/metrics")
        m = re.search(r"^profd_file_reads_stuck (\d+)$", metrics, re.M)
        assert m and 1 <= int(m.group(1)) <= 4, metrics	# ... 4 threads for the mount
        for h in hung:
            h.send_signal(signal.SIGSTOP)
        fresh_exe = tmp_path / "fresh"
        _gcc("-o", str(fresh_exe), os.path.join(WORKLOADS, "burner.c"))
        fresh = subprocess.Popen([str(fresh_exe), "60000"])
        time.sleep(5)
        p.proc.send_signal(signal.SIGTERM)
        p.proc.wait(10)
        p.reader.join(5)
        assert p.proc.returncode == 0, p.stderr()
    finally:
        _kill_releasing(p, trigger)
        for h in hung + ([fresh] if fresh else []):
            h.kill()
            h.wait()
    warnings = [l for l in p.lines if "/mnt/prog" in l and "warning" in l]
    assert len(warnings) == 20, p.stderr()	# once each
    total = good = 0
    for path in sorted(glob.glob(str(out / "cpu-*.pb.gz"))):
        for s in pprof_traces(pprof, path):
            if s["labels"].get("pid") != str(fresh.pid):
                continue
            total += s["value"]
            good += s["value"] * ("burn_inner" in s["frames"] and
                                  "main" in s["frames"] and
                                  bool(s["labels"].get("build_id")))
    assert total >= 50 and good >= 0.9 * total, (good, total, p.stderr())


def test_library_truncated_after_its_samples(profd_bin, pprof, tmp_path):
    lib = tmp_path / "libspin.so"
    exe = tmp_path / "spin"
    src = os.path.join(WORKLOADS, "libspin.c")
    _gcc("-shared", "-fPIC", "-o", str(lib), src)
    _gcc("-DSPIN_MAIN", "-o", str(exe), src, f"-L{tmp_path}", "-lspin",
         f"-Wl,-rpath,{tmp_path}")
    work = subprocess.Popen([str(exe), "30"])
    out = tmp_path / "out"
    out.mkdir()
    try:
        prof = subprocess.Popen([profd_bin, "--output-dir", str(out), "--pid", str(work.pid),
                                 "--profile-interval", "6", "--duration", "6",
                                 "--sampling-frequency", "99"],
                                stderr=subprocess.PIPE, text=True)
        head = prof.stderr.readline()
        assert "profd: sampling" in head, head
        time.sleep(1.5)
        # in place: same inode, no bytes left (the program dies of SIGBUS)
        subprocess.run(["truncate", "-s", "0", str(lib)], check=True)
        _, err = prof.communicate(timeout=30)
        err = head + err
    finally:
        work.kill()
        work.wait()
    assert prof.returncode == 0, err
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    assert paths, err
    in_lib = named = 0
    for path in paths:
        for s in pprof_traces(pprof, path):
            if s["labels"].get("pid") != str(work.pid):
                continue
            if any("libspin" in f or "spin_in_lib" in f for f in s["frames"]):
                in_lib += s["value"]
                named += s["value"] * ("spin_in_lib" in s["frames"])
    raw = "".join(comments(pprof, p) for p in paths)
    assert in_lib >= 50, err
    # every sample in the library names its function; none is a bare
    # "[libspin.so]" (had the file been unreadable, a counter would say so)
    assert named == in_lib, (named, in_lib, err)
    assert _counter(raw, "partial.symbols_unreadable") == 0


def test_hung_collector_does_not_hold_up_exit(profd_bin, tmp_path):
    """profd system-wide, exporting to an OTLP endpoint that accepts
    connections and never answers (a hung collector): its profiles wait
    in the export queue; SIGTERM 4 s in exits 0 within 2 s (the endpoint
    gets one second), saying what the endpoint did not take."""
    import socket

    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        port = srv.getsockname()[1]
        # something to sample: an idle machine gives empty profiles, nothing to send
        burn = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
        p = Profd([profd_bin, "--output-dir", str(tmp_path / "out"), "--duration", "60",
                   "--profile-interval", "1",
                   "--otlp-endpoint", f"http://127.0.0.1:{port}"])
        try:
            p.wait_line(r"sampling", 30)
            p.wait_line(r"^profd: interval 3:", 30)
            t0 = time.monotonic()
            p.proc.send_signal(signal.SIGTERM)
            p.proc.wait(20)
            took = time.monotonic() - t0
            p.reader.join(5)
        finally:
            burn.kill()
            burn.wait()
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()
    assert p.proc.returncode == 0, p.stderr()
    assert re.search(r"warning: OTLP endpoint \S+ did not take everything in 1000 ms",
                     p.stderr()), p.stderr()
    assert took < 2.0, f"SIGTERM took {took:.2f} s with the collector hung\n{p.stderr()}"
