"""Off-CPU profiling (--off-cpu): where threads block, for how long.

A program built -O2 -fomit-frame-pointer (DWARF unwinding only,
tests/workloads/offcpu.c) blocks in known chains and measures its own
blocked time in each with clock_gettime(); profd exec records every
blocking switch of it (--off-cpu-threshold 1). Google's pprof reads the
offcpu-*.pb.gz profiles: per chain, the off_cpu/nanoseconds of the stacks
holding the chain (names from the binary, consecutive) are within 10% of
the program's figure, and their kernel frames say why it blocked. A thread
still blocked when an interval ends counts in each interval up to its
boundary; a thread blocked when its process exits counts up to the exit.
"""
import collections
import json
import os
import shutil
import signal
import subprocess

import pytest

from pprof_traces import pprof_traces

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "tests", "workloads", "offcpu.c")

# chain (leaf first, consecutive user frames) -> a kernel frame (substring)
CHAINS = {
    "sleep_chain": (["sleep_chain", "b_sleep", "a_sleep", "sleeper"], "do_nanosleep"),
    "pipe_wait": (["pipe_wait", "pipe_reader"], "pipe_read"),
    "lock_wait": (["pthread_mutex_lock", "lock_wait", "lock_thread"], "futex_wait"),
    "fault_touch": (["fault_touch", "fault_thread"], "filemap_fault"),
}


@pytest.fixture(scope="module")
def offcpu_bin(tmp_path_factory):
    out = tmp_path_factory.mktemp("offcpu")
    dst = str(out / "offcpu")
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-pthread", "-o", dst, SRC],
                   check=True)
    return dst


def run_exec(profd_bin, out, argv, *args, timeout=180):
    """profd exec --off-cpu over @argv: (its stdout, offcpu profile paths)."""
    p = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--off-cpu", "--off-cpu-threshold", "1", *args, "--", *argv],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout, sorted(str(x) for x in out.glob("offcpu-*.pb.gz")), p.stderr


def measured(stdout):
    """{chain: ns} the program printed."""
    return {k: int(v) for k, v in (line.split() for line in stdout.splitlines())}


def offcpu_samples(pprof, path):
    return pprof_traces(pprof, path, "-sample_index=off_cpu", "-unit=ns")


def has_run(frames, chain):
    for i in range(len(frames) - len(chain) + 1):
        if frames[i:i + len(chain)] == chain:
            return True
    return False


def chain_ns(pprof, paths, chain, kernel_frame, others=None):
    """Off-CPU ns of the samples holding @chain, and of those among them
    whose frames show @kernel_frame; per file. @others (a list) gets the
    frames of the samples holding @chain without @kernel_frame."""
    total, with_kernel, per_file = 0, 0, []
    for path in paths:
        n = 0
        for s in offcpu_samples(pprof, path):
            if not has_run(s["frames"], chain):
                continue
            n += s["value"]
            if any(kernel_frame in f for f in s["frames"]):
                with_kernel += s["value"]
            elif others is not None:
                others.append((s["value"], s["frames"]))
        total += n
        per_file.append(n)
    return total, with_kernel, per_file


def check_kernel_frames(name, got, with_kernel, others):
    """The chain's blocked time is in @kernel_frame's stacks, but for a
    thread of the chain that blocked elsewhere in its frames (a page fault
    on its code or stack under memory pressure: io_schedule, not
    do_nanosleep): at most 2 % of it, each such stack with its own kernel
    frames from __schedule (a kernel stack, not a lost one)."""
    assert with_kernel >= 0.98 * got, (name, got, with_kernel, others[:3])
    assert all(frames and frames[0] == "__schedule" for _, frames in others), \
        (name, others[:3])


def test_offcpu_chains(profd_bin, pprof, offcpu_bin, tmp_path):
    big = tmp_path / "pages"
    with open(big, "wb") as f:
        f.write(os.urandom(32 << 20))
    stdout, paths, err = run_exec(profd_bin, tmp_path / "out", [offcpu_bin, "4", str(big)],
                                  "--profile-interval", "2", "--off-cpu-min-block", "0")
    want = measured(stdout)
    assert paths, err
    # every stack got its end: a switch-in no sched_switch showed (the
    # kernel here leaves out every switch away from the init's threads)
    # ends at the thread's next switch-out, never leaves a stack unended
    assert "off_cpu_no_end" not in err and "off_cpu_no_stack" not in err, err[-3000:]
    for name, (chain, kframe) in CHAINS.items():
        others = []
        got, with_kernel, _ = chain_ns(pprof, paths, chain, kframe, others)
        w = want[name]
        check_kernel_frames(name, got, with_kernel, others)
        if name == "fault_touch":
            # the program's figure holds the fault handler's CPU time too
            assert 0.3 * w <= got <= 1.1 * w, (name, got, w)
        else:
            assert abs(got - w) <= 0.1 * w, (name, got, w, err[-2000:])
    # the kernel stack starts at __schedule: the tracepoint's frames left out
    leaves = collections.Counter(s["frames"][0] for p in paths for s in offcpu_samples(pprof, p))
    assert leaves.most_common(1)[0][0] == "__schedule", leaves


def test_offcpu_interval_split(profd_bin, pprof, offcpu_bin, tmp_path):
    """A 3.5 s sleep with 1 s intervals: its time in each interval it spans."""
    stdout, paths, err = run_exec(profd_bin, tmp_path / "out", [offcpu_bin, "long", "3"],
                                  "--profile-interval", "1")
    w = measured(stdout)["long_sleep"]
    others = []
    got, with_kernel, per_file = chain_ns(pprof, paths, ["long_sleep", "long_chain", "main"],
                                          "do_nanosleep", others)
    assert abs(got - w) <= 0.1 * w, (got, w, per_file, err[-2000:])
    check_kernel_frames("long_sleep", got, with_kernel, others)
    spanned = [n for n in per_file if n]
    assert len(spanned) >= 3, per_file
    assert max(spanned) <= 1.15e9, per_file


def test_offcpu_exit_while_blocked(profd_bin, pprof, offcpu_bin, tmp_path):
    """A thread blocked in read() when its process exits: counted to the exit."""
    stdout, paths, err = run_exec(profd_bin, tmp_path / "out", [offcpu_bin, "exit", "1500"],
                                  "--profile-interval", "1")
    w = measured(stdout)["exit_wait"]
    others = []
    got, with_kernel, per_file = chain_ns(pprof, paths, ["exit_wait", "exit_chain"],
                                          "pipe_read", others)
    assert abs(got - w) <= 0.1 * w, (got, w, per_file, err[-2000:])
    check_kernel_frames("exit_wait", got, with_kernel, others)


def loaded_programs(pid):
    """Names of the BPF programs process @pid holds (its fds, bpftool)."""
    ids = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids += [line.split()[1] for line in f if line.startswith("prog_id:")]
        except OSError:
            continue
    names = set()
    for i in ids:
        out = subprocess.run(["bpftool", "prog", "show", "id", i, "-j"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            names.add(json.loads(out.stdout)["name"])
    return names


@pytest.mark.parametrize("off_cpu", [False, True])
def test_offcpu_programs_loaded_only_with_flag(profd_bin, tmp_path, off_cpu):
    """The sched_switch chain is loaded (and verified) only with --off-cpu."""
    if not shutil.which("bpftool"):
        pytest.skip("bpftool missing")
    p = subprocess.Popen([profd_bin, "-d", "60", "--no-gpu", "--output-dir",
                          str(tmp_path / "out")] + (["--off-cpu"] if off_cpu else []),
                         stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if "sampling" in line:
                break
        names = loaded_programs(p.pid)
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
    assert "profd_sample" in names, names
    sched = {n for n in names if n.endswith("_sched") or n.startswith("profd_sched_sw")}
    if off_cpu:
        assert {"profd_sched_switch", "unwind_fp_sched", "unwind_dwarf_sched",
                "emit_sched"} <= sched, names
    else:
        assert not sched, sched
