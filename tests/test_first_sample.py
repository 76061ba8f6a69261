"""True stacks from a process's first sample (issue 16): samples taken
before profd has a process's unwind tables carry a copy of the user stack,
and user space walks it with the same tables once they are loaded.

Every test here runs `profd exec` (the command and its children only, so
the machine's other processes do not matter) over no-frame-pointer
programs that start after profd is sampling: every process is new to profd
and its first samples come before its tables exist. The expected stack
comes from the program (tests/workloads/dwarf/chain.c: d_chain_e ..
d_chain_a, main, then libc's start frames and _start), read back with
Google's pprof.

--check-unwinder makes every sample carry its stack, walks it again in
user space and compares with what BPF walked: the user-space walker is
tested against the BPF one on the same inputs, from real samples.
"""
import collections
import os
import subprocess

import pytest

from pprof_traces import comments, pprof_traces
from test_dwarf import dwarf_build  # noqa: F401 (fixture)
from test_profd import user_to_main

CHAIN = ["d_chain_e", "d_chain_d", "d_chain_c", "d_chain_b", "d_chain_a", "main"]
START = ["__libc_start_call_main", "__libc_start_main", "_start"]


def run_exec(profd_bin, out, argv, *args, timeout=120):
    """profd exec over @argv; returns (rc, stderr, profile paths)."""
    out.mkdir(exist_ok=True)
    p = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--sampling-frequency", "199", *args, "--", *argv],
                       capture_output=True, text=True, timeout=timeout)
    paths = sorted(str(x) for x in out.glob("cpu-*.pb.gz"))
    return p.returncode, p.stderr, paths


def counters(pprof, paths):
    c = collections.Counter()
    for p in paths:
        for line in comments(pprof, p).splitlines():
            k, _, v = line.strip().removeprefix("Comment:").strip().partition("=")
            if v.isdigit():
                c[k] += int(v)
    return c


def chain_samples(pprof, paths, comm):
    """{pid: [user frames of each sample whose leaf is d_chain_e]} of @comm."""
    per = collections.defaultdict(list)
    for p in paths:
        for s in pprof_traces(pprof, p):
            if s["labels"].get("comm") != comm:
                continue
            fr = s["frames"]
            if "d_chain_e" not in fr:
                continue
            fr = fr[fr.index("d_chain_e"):]
            per[s["labels"]["pid"]] += [fr] * s["value"]
    return per


def exact(frames):
    """The whole chain, down to _start (libc's start frames by any name)."""
    return frames[:len(CHAIN)] == CHAIN and frames[-1] == "_start" and \
        len(frames) == len(CHAIN) + len(START)


def report(per, err):
    bad = collections.Counter(";".join(f) for fr in per.values() for f in fr if not exact(f))
    return f"most common untrue stacks: {bad.most_common(5)}\n{err[-3000:]}"


@pytest.fixture
def chain_copy(dwarf_build, tmp_path):  # noqa: F811
    """A fresh copy (a new inode: no table of it is cached) named dwfirst."""
    dst = tmp_path / "dwfirst"
    dst.write_bytes(open(dwarf_build("chain"), "rb").read())
    dst.chmod(0o755)
    return str(dst)


def test_ten_new_processes_have_full_stacks_from_their_first_sample(
        profd_bin, pprof, chain_copy, tmp_path):
    """Ten copies of a 1.5 s no-FP program started at once under profd:
    their samples in the hot chain are >= 97 % exact and each process's
    >= 90 % (a busy 2-CPU machine gives each only tens), counting their
    very first ones (no settling time), and stack copies were used."""
    script = f"for i in 1 2 3 4 5 6 7 8 9 10; do {chain_copy} 1.5 & done; wait"
    rc, err, paths = run_exec(profd_bin, tmp_path / "out", ["sh", "-c", script])
    assert rc == 0, err
    per = chain_samples(pprof, paths, "dwfirst")
    assert len(per) == 10, f"processes sampled: {len(per)}\n{err[-2000:]}"
    c = counters(pprof, paths)
    assert c["stat.stack_copies"] > 0, c
    for pid, frs in per.items():
        good = sum(exact(f) for f in frs)
        assert good >= 0.9 * len(frs), f"pid {pid}: {good}/{len(frs)} exact\n" + \
            report(per, err)
    frs = [f for v in per.values() for f in v]
    good = sum(exact(f) for f in frs)
    print(f"ten new processes: {good}/{len(frs)} exact")
    assert len(frs) >= 50, f"{len(frs)} samples\n{err[-2000:]}"
    assert good >= 0.97 * len(frs), f"{good}/{len(frs)} exact\n" + report(per, err)


def test_a_60ms_program_run_in_a_loop_has_full_stacks(profd_bin, pprof, chain_copy,
                                                      tmp_path):
    """A program that lives 60 ms, run 25 times one after another: >= 95 %
    of all its hot-chain samples are exact (before stack copies its first
    5-20 samples were a leaf alone or frame-pointer guesses)."""
    script = f"for i in $(seq 1 25); do {chain_copy} 0.06; done"
    rc, err, paths = run_exec(profd_bin, tmp_path / "out", ["sh", "-c", script])
    assert rc == 0, err
    per = chain_samples(pprof, paths, "dwfirst")
    frs = [f for v in per.values() for f in v]
    good = sum(exact(f) for f in frs)
    print(f"60 ms loop: {good}/{len(frs)} exact over {len(per)} processes")
    assert len(per) >= 15 and len(frs) >= 60, f"{len(per)} processes, {len(frs)} " \
        f"samples\n{err[-2000:]}"
    assert good >= 0.95 * len(frs), f"{good}/{len(frs)} exact\n" + report(per, err)


def test_user_space_walker_agrees_with_bpf_on_the_same_samples(
        profd_bin, pprof, dwarf_build, chain_copy, tmp_path):  # noqa: F811
    """--check-unwinder: every sample carries its stack; the user-space walk
    of the copy equals BPF's walk of the live stack, over a call chain, a
    200-deep recursion, a signal handler's frames and big frames."""
    script = (f"{chain_copy} 2 & {dwarf_build('recursion')} 2 200 & "
              f"{dwarf_build('signal')} 2 & {dwarf_build('bigframes')} 2 & wait")
    rc, err, paths = run_exec(profd_bin, tmp_path / "out", ["sh", "-c", script],
                              "--check-unwinder", "-v")
    assert rc == 0, err
    c = counters(pprof, paths)
    print({k: v for k, v in c.items() if "check" in k or "stack_copy" in k})
    assert c["stat.unwinder_check_match"] >= 150, f"{c}\n{err[-2000:]}"
    assert c["partial.unwinder_check_mismatch"] == 0, \
        "\n".join(l for l in err.splitlines() if "check-unwinder" in l)[:3000]


def test_without_stack_copies_new_processes_lose_their_first_stacks(
        profd_bin, pprof, chain_copy, tmp_path):
    """The same start as above with --stack-copy-bytes 0: no copies, so a
    new process's first samples cannot be walked with tables (they end in
    [truncated] or stop early), which is what the copies fix."""
    script = f"for i in 1 2 3 4 5; do {chain_copy} 0.3 & done; wait"
    rc, err, paths = run_exec(profd_bin, tmp_path / "out", ["sh", "-c", script],
                              "--stack-copy-bytes", "0")
    assert rc == 0, err
    c = counters(pprof, paths)
    assert c["stat.stack_copies"] == 0, c
    per = chain_samples(pprof, paths, "dwfirst")
    frs = [f for v in per.values() for f in v]
    assert frs, err[-2000:]
    print(f"without copies: {sum(exact(f) for f in frs)}/{len(frs)} exact")
