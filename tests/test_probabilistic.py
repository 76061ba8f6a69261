"""Probabilistic profiling (--probabilistic-interval, --probabilistic-
threshold): a real profd over a busy workload; Google's pprof reads what
was written. Threshold 0 collects nothing, 100 everything."""
import glob
import os
import re
import subprocess
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


def test_profiles_say_how_long_they_sampled(profd_bin, pprof, tmp_path):
    """Draws every second, profiles every 2: a profile is sampled for 1 or
    2 s of its 2 (0: none written), which its comment
    probabilistic_sampled_ms says; the burner's samples (one CPU, 97 Hz)
    follow that time, not the profile's duration."""
    r, pid, profiles = run_over_workload(profd_bin, tmp_path, "--probabilistic-threshold",
                                         "50", "--profile-interval", "2", seconds=20)
    assert r.returncode == 0, r.stderr
    assert profiles, r.stderr
    for path in profiles[:-1]:      # the last one is cut short by --duration
        text = comments(pprof, path)
        m = re.search(r"probabilistic_sampled_ms=(\d+)", text)
        assert m, text[:2000]
        on_s = int(m.group(1)) / 1000
        assert 0 <= on_s <= 2.1, (path, on_s)
        mine = [s for s in pprof_traces(pprof, path) if s["labels"].get("pid") == str(pid)]
        got = sum(s["value"] for s in mine)
        assert abs(got - 97 * on_s) <= 0.25 * 97 * on_s + 8, (path, on_s, got)
