"""src/proc/cgroup.c and the per-process metadata of src/proc/process.c:
build/tests/unit/test_cgroup (no BPF): container ids in the cgroup paths
of docker, containerd/CRI, CRI-O, podman and nerdctl (and look-alikes that
are not containers), choosing a path from /proc/PID/cgroup texts of v2,
v1 and hybrid hosts, and, as root, a child moved into a fresh docker-style
cgroup (v2 and v1 pids) read through the process table: container id,
cgroup path, executable name and build ID."""
import os
import subprocess

from conftest import BUILD


def test_cgroup_unit():
    binary = os.path.join(BUILD, "tests", "unit", "test_cgroup")
    assert os.access(binary, os.X_OK), "build/tests/unit/test_cgroup missing: run make"
    r = subprocess.run([binary], capture_output=True, text=True, timeout=60,
                       cwd=os.path.dirname(BUILD))
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
