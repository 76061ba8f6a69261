"""Off-CPU stacks of language runtimes (--off-cpu): a Python or Ruby
program blocks in known chains (a sleep, a queue read another thread
feeds, a socket read) and prints, per chain, the runtime's own view of
the stack at the blocking call (Python: traceback.extract_stack(); Ruby:
caller_locations) and the ns it spent blocked there. profd exec records
every blocking switch (--off-cpu-threshold 1); Google's pprof reads the
offcpu profiles: the stacks holding the runtime's chain (consecutive,
leaf first) add up to the program's figure within 10%.
"""
import glob
import os
import subprocess

import pytest

from pprof_traces import pprof_traces

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "tests", "workloads")


def pythons():
    out = [("debian-3.11", "/usr/bin/python3.11")]
    found = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3.12"))
    out.append(("pyenv-3.12", found[-1] if found else "/root/.pyenv/versions/3.12"))
    return out


def run(profd_bin, out, argv):
    p = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--off-cpu", "--off-cpu-threshold", "1", "--off-cpu-min-block", "0",
                        "--profile-interval", "2", "--", *argv],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    chains = {}
    for line in p.stdout.splitlines():
        name, ns, frames = line.split(maxsplit=2)
        chains[name] = (int(ns), frames.split(";"))
    return chains, sorted(str(x) for x in out.glob("offcpu-*.pb.gz")), p.stderr


def has_run(frames, chain):
    return any(frames[i:i + len(chain)] == chain for i in range(len(frames) - len(chain) + 1))


def check(pprof, chains, paths, err, name_of=lambda f: f):
    assert paths, err[-2000:]
    samples = [s for p in paths
               for s in pprof_traces(pprof, p, "-sample_index=off_cpu", "-unit=ns")]
    for chain, (want, frames) in chains.items():
        got = sum(s["value"] for s in samples
                  if has_run([name_of(f) for f in s["frames"]], frames))
        assert abs(got - want) <= 0.1 * want, (chain, frames, got, want, err[-2000:])


@pytest.mark.parametrize("name,py", pythons(), ids=[n for n, _ in pythons()])
def test_offcpu_python_frames(profd_bin, pprof, tmp_path, name, py):
    if not os.path.exists(py):
        pytest.skip(f"{py} not installed")
    chains, paths, err = run(profd_bin, tmp_path / "out",
                             [py, os.path.join(WORK, "python", "offcpu.py"), "4"])
    assert set(chains) == {"sleep", "queue", "socket"}
    check(pprof, chains, paths, err)


def test_offcpu_ruby_frames(profd_bin, pprof, tmp_path):
    """Ruby frames off-CPU: profd names methods Class#name, Ruby's own
    caller_locations names them bare."""
    if not os.path.exists("/usr/bin/ruby"):
        pytest.skip("ruby not installed")
    chains, paths, err = run(profd_bin, tmp_path / "out",
                             ["/usr/bin/ruby", os.path.join(WORK, "ruby", "offcpu.rb"), "4"])
    assert set(chains) == {"sleep", "queue", "socket"}
    check(pprof, chains, paths, err, name_of=lambda f: f.split("#")[-1])
