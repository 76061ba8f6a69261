"""Probabilistic profiling (--probabilistic-interval, --probabilistic-
threshold): a real profd over a busy workload; Google's pprof reads what
was written. Threshold 0 collects nothing, 100 everything."""
import bisect
import glob
import os
import re
import subprocess
import threading
import time

from conftest import ROOT
from pprof_traces import comments, pprof_traces


def burner(tmp_path):
    exe = str(tmp_path / "burner")
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", exe,
                    os.path.join(ROOT, "tests", "workloads", "burner.c")], check=True)
    return exe


def run_over_workload(profd_bin, tmp_path, *args, seconds=4, hz=97):
    """profd for @seconds one-second intervals while a burner spins on the CPU."""
    out = tmp_path / "out"
    work = subprocess.Popen([burner(tmp_path), str((seconds + 16) * 1000)])
    try:
        time.sleep(0.3)
        r = subprocess.run([profd_bin, "--no-gpu", "-o", str(out), "--duration", str(seconds),
                            "--profile-interval", "1", "--probabilistic-interval", "1s",
                            "-F", str(hz), *args],
                           capture_output=True, text=True, timeout=seconds + 60)
    finally:
        work.kill()
        work.wait()
    return r, work.pid, sorted(glob.glob(str(out / "cpu-*.pb.gz")))


def test_threshold_0_collects_nothing(profd_bin, tmp_path):
    r, _, profiles = run_over_workload(profd_bin, tmp_path, "--probabilistic-threshold", "0")
    assert r.returncode == 0, r.stderr
    assert profiles == [], r.stderr
    assert r.stderr.count("not profiled (--probabilistic-threshold 0)") >= 4, r.stderr
    assert "no interval was profiled" in r.stderr
    assert not os.path.exists(tmp_path / "out" / "flamegraph.html")


def test_threshold_100_collects_every_interval(profd_bin, pprof, tmp_path):
    r, pid, profiles = run_over_workload(profd_bin, tmp_path, "--probabilistic-threshold",
                                         "100")
    assert r.returncode == 0, r.stderr
    assert "not profiled" not in r.stderr
    assert len(profiles) >= 4, r.stderr
    # every interval but the last partial one has the workload, ~97 Hz on one CPU
    for path in profiles[:4]:
        mine = [s for s in pprof_traces(pprof, path) if s["labels"].get("pid") == str(pid)]
        total = sum(s["value"] for s in mine)
        assert total >= 40, (path, total)
        assert any("burn_inner" in s["frames"] for s in mine)


def test_probabilistic_switching_is_reported(profd_bin, tmp_path):
    """-v says each switch; the perf events are switched, not reloaded: one
    BPF load line at start and the run goes on through the switches."""
    r, _, profiles = run_over_workload(profd_bin, tmp_path, "--probabilistic-threshold",
                                       "50", "-v")
    assert r.returncode == 0, r.stderr
    assert "probabilistic profiling: 50% of 1 s intervals" in r.stderr
    assert r.stderr.count("profd: sampling ") == 1
    on_off = [l for l in r.stderr.splitlines() if "probabilistic profiling: sampling" in l]
    # consecutive switch lines alternate: only a change is reported
    states = [l.split("sampling ")[1].split()[0] for l in on_off]
    assert all(a != b for a, b in zip(states, states[1:])), states


def test_interval_switched_off_gets_no_stragglers(profd_bin, tmp_path):
    """Samples still in the ringbuf when sampling switches off belong to the
    interval that ends there: the interval after an off switch writes no
    profile (at 999 Hz the ringbuf always holds some at the switch)."""
    r, _, _ = run_over_workload(profd_bin, tmp_path, "--probabilistic-threshold", "50", "-v",
                                seconds=14, hz=999)
    assert r.returncode == 0, r.stderr
    # each draw comes right after an interval's line: the state when an
    # interval's line is printed is the state of that whole interval
    state, checked = None, 0
    for line in r.stderr.splitlines():
        if "probabilistic profiling: 50% of 1 s intervals; this one: " in line:
            state = line.rsplit(" ", 1)[1]
        elif "probabilistic profiling: sampling " in line:
            state = line.split("sampling ")[1].split()[0]
        elif line.startswith("profd: interval ") and state == "off":
            assert "not profiled" in line, (line, r.stderr)
            checked += 1
    assert state is not None, r.stderr
    # 14 draws at 50%: all on (or all off) has probability 2**-13
    assert checked >= 1, r.stderr


def cpu_seconds(pid):
    """CPU time @pid has had so far, in seconds (/proc/PID/schedstat: ns)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


class CpuClock:
    """The CPU time of a process read every 10 ms from a thread: at(t) is
    its CPU time (s) at monotonic time t, interpolated."""

    def __init__(self, pid):
        self.pid, self.points, self.done = pid, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            try:
                self.points.append((time.monotonic(), cpu_seconds(self.pid)))
            except (OSError, ValueError):
                return
            time.sleep(0.01)

    def stop(self):
        self.done.set()
        self.thread.join()

    def at(self, t):
        i = bisect.bisect_left(self.points, (t,))
        assert 0 < i < len(self.points), (t, self.points[:1], self.points[-1:])
        (t0, c0), (t1, c1) = self.points[i - 1], self.points[i]
        return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def sampled_cpu(profd_bin, tmp_path, seconds, interval, *args):
    """profd -v with 1 s draws and @interval s profiles over a burner.
    profd draws at its start and every second after (its "sampling" line
    is the start); -v says each switch, read here as it comes. Returns
    (returncode, stderr, burner pid, {profile path: the seconds k (from
    the start) drawn on in it}, cpu(k): the burner's CPU s in second k)."""
    out = tmp_path / "out"
    work = subprocess.Popen([burner(tmp_path), str((seconds + 16) * 1000)])
    prof = clock = None
    lines = []
    try:
        time.sleep(0.3)
        clock = CpuClock(work.pid)
        prof = subprocess.Popen([profd_bin, "--no-gpu", "-v", "-o", str(out),
                                 "--duration", str(seconds), "--probabilistic-interval", "1s",
                                 "--profile-interval", str(interval), "-F", "97", *args],
                                stderr=subprocess.PIPE, text=True)
        lines = [(time.monotonic(), line) for line in prof.stderr]
        prof.wait(timeout=60)
    finally:
        if clock:
            clock.stop()
        for p in (prof, work):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    err = "".join(l for _, l in lines)
    start = next(t for t, l in lines if l.startswith("profd: sampling "))
    draws = {}      # second k -> on: the draws that switched (-v) and the first
    for t, line in lines:
        m = re.search(r"probabilistic profiling: (?:sampling|.*this one:) (on|off)", line)
        if m:
            draws[round(t - start)] = m.group(1) == "on"
    on, state = set(), False
    for k in range(seconds):
        state = draws.get(k, state)
        if state:
            on.add(k)
    drawn = {}
    for _, line in lines:
        m = re.match(r"profd: interval (\d+): .* wrote (\S+)$", line.strip())
        if m:
            n = int(m.group(1))
            drawn[m.group(2)] = [k for k in range((n - 1) * interval, n * interval) if k in on]
    return (prof.returncode, err, work.pid, drawn,
            lambda k: clock.at(start + k + 1) - clock.at(start + k))


def test_profiles_say_how_long_they_sampled(profd_bin, pprof, tmp_path):
    """Draws every second, profiles every 2: a profile is sampled for 1 or
    2 s of its 2 (0: none written), which its comment
    probabilistic_sampled_ms says (the draws -v reports say which seconds);
    the burner's samples (97 Hz of its CPU time) follow the CPU time it had
    in those seconds, not the profile's duration. The burner shares the
    machine: its CPU time is read from /proc, not assumed to be one CPU."""
    rc, err, pid, drawn, cpu_in = sampled_cpu(profd_bin, tmp_path, 20, 2,
                                              "--probabilistic-threshold", "50")
    assert rc == 0, err
    profiles = sorted(glob.glob(str(tmp_path / "out" / "cpu-*.pb.gz")))
    assert profiles, err
    assert sorted(drawn) == profiles, err
    for path in profiles[:-1]:      # the last one is cut short by --duration
        text = comments(pprof, path)
        m = re.search(r"probabilistic_sampled_ms=(\d+)", text)
        assert m, text[:2000]
        on_s = int(m.group(1)) / 1000
        seconds_on = drawn[path]
        assert abs(on_s - len(seconds_on)) <= 0.1, (path, on_s, seconds_on, err)
        cpu = sum(cpu_in(k) for k in seconds_on)
        mine = [s for s in pprof_traces(pprof, path) if s["labels"].get("pid") == str(pid)]
        got = sum(s["value"] for s in mine)
        print(f"{os.path.basename(path)}: sampled {on_s} s (seconds {seconds_on}), "
              f"burner CPU {cpu:.3f} s, {got} samples")
        assert abs(got - 97 * cpu) <= 0.25 * 97 * cpu + 8, (path, on_s, cpu, got)
