"""Integration tests: the real profd (real BPF load, cpu-clock sampling)
against workloads built here with frame pointers, read back with Google's
pprof. Needs root, like profd itself."""
import collections
import glob
import os
import signal
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, mount_ns_argv
from pprof_traces import comments, pprof_traces
from test_output import dump_dom, parse_dom

WORKLOADS = ["chain", "syscalls", "burner"]
FREQ = "99"


@pytest.fixture(scope="session")
def workloads(tmp_path_factory):
    """Workloads built -O2 -fno-omit-frame-pointer from tests/workloads."""
    out = tmp_path_factory.mktemp("workloads")
    paths = {}
    for name in WORKLOADS:
        src = os.path.join(ROOT, "tests", "workloads", name + ".c")
        dst = str(out / name)
        subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", dst, src],
                       check=True)
        paths[name] = dst
    return paths


def run_profd(profd_bin, outdir, *args, timeout=60):
    """Run profd to completion; returns (returncode, stderr, profile paths)."""
    proc = subprocess.run([profd_bin, "--output-dir", str(outdir), *args],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stderr, sorted(glob.glob(str(outdir / "cpu-*.pb.gz")))


def profile_workload(profd_bin, outdir, argv, *profd_args, warmup=0.5):
    """Start workload @argv, run profd over it, stop the workload.
    Returns (workload Popen, returncode, stderr, profile paths)."""
    work = subprocess.Popen(argv)
    try:
        time.sleep(warmup)
        rc, err, paths = run_profd(profd_bin, outdir, *profd_args)
    finally:
        work.kill()
        work.wait()
    return work, rc, err, paths


def samples_of(pprof, paths, pred):
    out = []
    for p in paths:
        out += [s for s in pprof_traces(pprof, p) if pred(s["labels"])]
    return out


def to_main(frames):
    """Frames from the leaf down to main (inclusive); all frames if no main."""
    return frames[:frames.index("main") + 1] if "main" in frames else frames


_KSYMS = None


def kernel_names():
    global _KSYMS
    if _KSYMS is None:
        with open("/proc/kallsyms") as f:
            _KSYMS = {line.split()[2] for line in f}
    return _KSYMS


def user_to_main(frames):
    """to_main() without the kernel frames on top (interrupts, syscalls)."""
    ks = kernel_names()
    i = 0
    while i < len(frames) and frames[i].split(" [")[0] in ks:
        i += 1
    return to_main(frames[i:])


BURNER = ["burn_inner", "burn_outer", "main"]


def is_burner_stack(frames):
    """The burner's stack: burn_inner, burn_outer, main, with libc's
    clock_gettime (and the vDSO's, which it calls) above them when the
    sample caught burn_inner reading its CPU time: the vDSO falls back to
    a system call for CLOCK_PROCESS_CPUTIME_ID, and that share of the time
    is the machine's system call cost, several times bare metal's in a
    VM."""
    u = user_to_main(frames)
    if u == BURNER:
        return True
    top = u[:-len(BURNER)]
    return (u[-len(BURNER):] == BURNER and top[-1] == "clock_gettime"
            and all(f in ("__vdso_clock_gettime", "clock_gettime")
                    or f.startswith("[vdso]+0x") for f in top))


def share(samples, pred):
    total = sum(s["value"] for s in samples)
    good = sum(s["value"] for s in samples if pred(s))
    return good, total


def test_chain_has_exact_stack(profd_bin, pprof, workloads, tmp_path):
    work, rc, err, paths = profile_workload(profd_bin, tmp_path, [workloads["chain"], "7"],
                                            "--duration", "5", "--sampling-frequency", FREQ)
    assert rc == 0, err
    assert paths, err
    samples = samples_of(pprof, paths, lambda l: l.get("pid") == str(work.pid))
    want = ["chain_e", "chain_d", "chain_c", "chain_b", "chain_a", "main"]
    good, total = share(samples, lambda s: user_to_main(s["frames"]) == want)
    assert total >= 100, f"too few samples of the workload: {total}\n{err}"
    assert good >= 0.95 * total, f"{good}/{total} exact stacks: {samples[:5]}"
    # labels: comm and thread_name strings, pid/tid numbers
    s = samples[0]["labels"]
    assert s["comm"] == "chain" and s["thread_name"] == "chain"
    assert s["tid"] == str(work.pid)


def test_flamegraph_of_a_real_run_renders(profd_bin, chromium, workloads, tmp_path):
    _, rc, err, _ = profile_workload(profd_bin, tmp_path / "out", [workloads["chain"], "5"],
                                     "--duration", "3", "--sampling-frequency", FREQ)
    assert rc == 0, err
    dom = parse_dom(dump_dom(chromium, str(tmp_path / "out" / "flamegraph.html"), tmp_path))
    drawn = {f["data-name"]: f for f in dom.frames}
    # the workload is the hottest thing on this machine: its whole chain is drawn
    for name in ["chain", "main", "chain_a", "chain_b", "chain_c", "chain_d", "chain_e"]:
        assert name in drawn, sorted(drawn)[:40]
        assert name in drawn[name]["_text"]


def test_syscall_loop_has_kernel_frames(profd_bin, pprof, workloads, tmp_path):
    work, rc, err, paths = profile_workload(profd_bin, tmp_path, [workloads["syscalls"], "7"],
                                            "--duration", "5", "--sampling-frequency", FREQ)
    assert rc == 0, err
    samples = samples_of(pprof, paths, lambda l: l.get("pid") == str(work.pid))
    user = ["do_syscall", "sys_loop", "main"]

    def kernel_above_main(s):
        f = to_main(s["frames"])
        if len(f) <= 3 or f[-3:] != user:
            return False
        kernel = f[:-3]
        return any(k.startswith(("entry_SYSCALL_64", "do_syscall_64")) for k in kernel)

    good, total = share(samples, kernel_above_main)
    assert total >= 100, f"too few samples: {total}\n{err}"
    assert good >= 0.6 * total, f"{good}/{total} with kernel frames: {samples[:5]}"
    # kernel frames were symbolized through kallsyms (the read path)
    assert any("read" in k for s in samples for k in s["frames"][:-3]), samples[:3]


def test_short_lived_processes_symbolized(profd_bin, pprof, workloads, tmp_path):
    loop = subprocess.Popen(
        ["/bin/sh", "-c", f"end=$(($(date +%s)+8)); while [ $(date +%s) -lt $end ]; "
         f"do {workloads['burner']} 50; done"])
    try:
        time.sleep(0.5)
        rc, err, paths = run_profd(profd_bin, tmp_path, "--duration", "6",
                                   "--sampling-frequency", FREQ)
    finally:
        loop.kill()
        loop.wait()
    assert rc == 0, err
    samples = samples_of(pprof, paths, lambda l: l.get("comm") == "burner")
    pids = {s["labels"]["pid"] for s in samples}
    good, total = share(samples, lambda s: is_burner_stack(s["frames"]))
    assert len(pids) >= 20, f"only {len(pids)} burner processes seen\n{err}"
    # 0.7, not more: a 50 ms process's first samples are walked by frame
    # pointers until its tables are in BPF, and the burner's libc frames
    # have none (82-95 % exact here, old and new builds alike, lower under
    # load): issue 16 (full stacks from the first sample) raises this.
    assert good >= 0.7 * total, f"{good}/{total} fully symbolized: {samples[:5]}"


def test_pid_filter_profiles_only_that_process(profd_bin, pprof, workloads, tmp_path):
    a = subprocess.Popen([workloads["chain"], "5"])
    b = subprocess.Popen([workloads["chain"], "8"])
    try:
        time.sleep(0.3)
        start = time.monotonic()
        # no --duration: profd stops by itself once its only target exits
        rc, err, paths = run_profd(profd_bin, tmp_path, "--pid", str(a.pid),
                                   "--sampling-frequency", FREQ, timeout=30)
        elapsed = time.monotonic() - start
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
    assert rc == 0, err
    assert "exited" in err
    assert elapsed < 7.5, f"profd ran {elapsed:.1f}s after its target exited"
    samples = samples_of(pprof, paths, lambda l: True)
    assert sum(s["value"] for s in samples) >= 50, err
    assert {s["labels"]["pid"] for s in samples} == {str(a.pid)}


def test_sigterm_writes_partial_interval(profd_bin, pprof, workloads, tmp_path):
    work = subprocess.Popen([workloads["chain"], "10"])
    try:
        prof = subprocess.Popen([profd_bin, "--output-dir", str(tmp_path),
                                 "--profile-interval", "60", "--sampling-frequency", FREQ],
                                stderr=subprocess.PIPE, text=True)
        head = prof.stderr.readline()   # BPF loaded and attached: sampling
        assert "profd: sampling" in head, head
        time.sleep(3)
        assert not glob.glob(str(tmp_path / "cpu-*.pb.gz"))
        prof.send_signal(signal.SIGTERM)
        _, err = prof.communicate(timeout=20)
        err = head + err
    finally:
        work.kill()
        work.wait()
    assert prof.returncode == 0, err
    paths = glob.glob(str(tmp_path / "cpu-*.pb.gz"))
    assert len(paths) == 1, err
    samples = samples_of(pprof, paths, lambda l: l.get("pid") == str(work.pid))
    assert sum(s["value"] for s in samples) >= 50, err
    assert os.path.getsize(tmp_path / "flamegraph.html") > 0
    raw = comments(pprof, paths[0])
    assert "lost.ringbuf_full=" in raw and "partial.user_stack_read_error=" in raw


@pytest.mark.parametrize("args,needle", [
    (["--sampling-frequency", "0"], "1-1000"),
    (["--sampling-frequency", "1001"], "1-1000"),
    (["--sampling-frequency", "abc"], "1-1000"),
    (["--profile-interval", "0"], "--profile-interval"),
    (["--duration", "-5"], "--duration"),
    (["--pid", "12x"], "--pid"),
    (["--max-stack-depth", "513"], "--max-stack-depth"),
    (["--no-such-flag"], "unrecognized option"),
    (["extra-argument"], "unexpected argument"),
    (["--duration"], "requires an argument"),
])
def test_bad_flags_give_usage_error(profd_bin, args, needle):
    """Exit 64, the reason, a pointer to --help; the error line starts with
    "profd: " as every other does, not the path profd was started by
    (getopt's argv[0]; @profd_bin is a path)."""
    proc = subprocess.run([profd_bin, *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 64, proc.stderr
    assert needle in proc.stderr
    assert proc.stderr.startswith("profd: "), proc.stderr
    assert "--help" in proc.stderr or "Usage" in proc.stderr


def test_missing_pid_is_one_line_error(profd_bin):
    proc = subprocess.run([profd_bin, "--pid", "999999999"], capture_output=True,
                          text=True, timeout=10)
    assert proc.returncode == 1
    assert "no such process" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_help_has_examples(profd_bin):
    out = subprocess.run([profd_bin, "--help"], capture_output=True, text=True).stdout
    assert "EXAMPLES" in out and "--sampling-frequency" in out and "--pid" in out


def test_unprivileged_user_gets_clear_error(profd_bin, tmp_path):
    os.chmod(tmp_path, 0o777)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           profd_bin, "--duration", "1", "--output-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "root" in lines[0] and "CAP_BPF" in lines[0], lines


def test_deleted_binary_still_symbolized(profd_bin, pprof, workloads, tmp_path):
    exe = tmp_path / "chain-deleted"
    exe.write_bytes(open(workloads["chain"], "rb").read())
    exe.chmod(0o755)
    work = subprocess.Popen([str(exe), "6"])
    try:
        time.sleep(0.3)
        exe.unlink()
        rc, err, paths = run_profd(profd_bin, tmp_path / "out", "--duration", "4",
                                   "--sampling-frequency", FREQ, "--pid", str(work.pid))
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    samples = samples_of(pprof, paths, lambda l: True)
    want = ["chain_e", "chain_d", "chain_c", "chain_b", "chain_a", "main"]
    good, total = share(samples, lambda s: user_to_main(s["frames"]) == want)
    assert total >= 50 and good >= 0.95 * total, (good, total, samples[:3])


def test_binary_in_private_mount_namespace(profd_bin, pprof, workloads, scratch_mount,
                                           tmp_path):
    """Like a container: the binary lives on a tmpfs only its namespace sees
    (mounted over scratch_mount there; here scratch_mount stays empty)."""
    exe = scratch_mount / "chain-ns"
    script = (f"mount -t tmpfs none {scratch_mount} && cp {workloads['chain']} {exe} && "
              f"exec {exe} 6")
    work = subprocess.Popen(mount_ns_argv(script))
    try:
        time.sleep(0.5)
        assert not os.path.exists(exe)
        rc, err, paths = run_profd(profd_bin, tmp_path, "--duration", "4",
                                   "--sampling-frequency", FREQ)
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    samples = samples_of(pprof, paths, lambda l: l.get("comm") == "chain-ns")
    want = ["chain_e", "chain_d", "chain_c", "chain_b", "chain_a", "main"]
    good, total = share(samples, lambda s: user_to_main(s["frames"]) == want)
    assert total >= 50 and good >= 0.95 * total, (good, total, samples[:3])
    raw = subprocess.run([pprof, "-raw", "-symbolize=none", paths[0]],
                         capture_output=True, text=True).stdout
    assert str(exe) in raw   # the mapping keeps the path the process saw


def test_reused_pid_gets_the_new_process_maps(profd_bin, pprof, workloads, tmp_path):
    """A PID freed by an exited process and handed to the next exec must not
    be symbolized with the old process's mappings."""
    prof = subprocess.Popen([profd_bin, "--output-dir", str(tmp_path), "--duration", "7",
                             "--sampling-frequency", FREQ], stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    reused = None
    for _ in range(5):
        first = subprocess.Popen([workloads["chain"], "1.5"])
        first.wait()
        # ask the kernel to hand out the same PID next (pid namespaces: ns_last_pid)
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(first.pid - 1))
        second = subprocess.Popen([workloads["burner"], "2500"])
        if second.pid == first.pid:
            reused = second
            break
        second.kill()
        second.wait()
    assert reused, "could not get the same PID twice"
    reused.wait()
    _, err = prof.communicate(timeout=30)
    assert prof.returncode == 0, err
    paths = sorted(glob.glob(str(tmp_path / "cpu-*.pb.gz")))
    samples = samples_of(pprof, paths, lambda l: l.get("pid") == str(reused.pid)
                         and l.get("comm") == "burner")
    good, total = share(samples, lambda s: is_burner_stack(s["frames"]))
    bad = collections.Counter(tuple(user_to_main(s["frames"])) for s in samples
                              if not is_burner_stack(s["frames"]))
    assert total >= 50 and good >= 0.9 * total, (good, total, bad.most_common(5))
