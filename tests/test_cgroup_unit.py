"""src/proc/cgroup.c and the per-process metadata of src/proc/process.c:
build/tests/unit/test_cgroup (no BPF): container ids in the cgroup paths
of docker, containerd/CRI, CRI-O, podman and nerdctl (and look-alikes that
are not containers), choosing a path from /proc/PID/cgroup texts of v2,
v1 and hybrid hosts, and, as root, a child moved into a fresh docker-style
cgroup (v2 and v1 pids) read through the process table: container id,
cgroup path, executable name and build ID."""
from conftest import run_unit


def test_cgroup_unit():
    run_unit("test_cgroup", timeout=60)
