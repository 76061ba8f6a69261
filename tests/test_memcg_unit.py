"""src/util/memcg.c (no BPF): the room left in profd's own memory cgroup,
read from fake /proc/self/cgroup and mountinfo texts (cgroup v2, a
container's mount root, v1 on a hybrid host, escaped mount points, usage
over the limit, no memory cgroup) and, as root, from a real v1 cgroup with
a 512 MiB limit this test program moves itself into:
build/tests/unit/test_memcg."""
from conftest import run_unit


def test_memcg_unit():
    run_unit("test_memcg", timeout=60)
