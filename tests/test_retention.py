"""--output-retention: src/output/retention.c through its unit test
build/tests/unit/test_retention (real files with explicit mtimes: the age
limit removes exactly the old ones, the size limit the oldest first, never
the newest, foreign files untouched, parse cases), then a short real run
of profd over a directory that already holds old profiles and foreign
files (needs root, like profd)."""
import os
import re
import subprocess
import time

import pytest

from conftest import BUILD

OLD = ["cpu-20200101T000000Z.pb.gz", "gpu-20200101T000000Z.pb.gz",
       "gpu-pc-20200101T000000Z-1.pb.gz"]
# (not NAME.tmpXXXXXX: profd removes its own stale temporary files at start)
FOREIGN = ["flamegraph.html.old", "notes.txt", "cpu-20200101T000000Z.pb.gz.bak",
           "cpu-old.pb.gz", "mem-20200101T000000Z.pb.gz"]


def test_retention_unit():
    binary = os.path.join(BUILD, "tests", "unit", "test_retention")
    assert os.access(binary, os.X_OK), "build/tests/unit/test_retention missing: run make"
    r = subprocess.run([binary], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


def test_retention_flag_rejects_bad_values(profd_bin):
    for value in ["0d", "7", "7x", "-1d", "1.5GiB", "7d,1d", ""]:
        r = subprocess.run([profd_bin, "--output-retention", value, "--duration", "1"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 64, (value, r.returncode, r.stderr)
        assert "output-retention" in r.stderr, (value, r.stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="profd needs root")
def test_retention_real_run(profd_bin, tmp_path):
    """Old profiles (30 days) go at the first interval; the new profiles,
    the flame graph and files that are not profd's stay."""
    old_time = time.time() - 30 * 86400
    for name in OLD + FOREIGN:
        path = tmp_path / name
        path.write_bytes(b"x" * 1000)
        os.utime(path, (old_time, old_time))
    r = subprocess.run([profd_bin, "--output-dir", str(tmp_path), "--duration", "3",
                        "--profile-interval", "1", "--output-retention", "1d,1GiB",
                        "--no-gpu"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    left = set(os.listdir(tmp_path))
    assert not left & set(OLD), (left, r.stderr)
    assert set(FOREIGN) <= left, (left, r.stderr)
    assert "flamegraph.html" in left
    assert [n for n in left if n.startswith("cpu-") and n.endswith(".pb.gz")
            and n not in FOREIGN], left


@pytest.mark.skipif(os.geteuid() != 0, reason="profd needs root")
def test_retention_real_run_size_keeps_newest(profd_bin, tmp_path):
    """A 1-byte cap: after every interval only the newest profile is left."""
    old_time = time.time() - 3600
    for name in OLD:
        path = tmp_path / name
        path.write_bytes(b"x" * 1000)
        os.utime(path, (old_time, old_time))
    r = subprocess.run([profd_bin, "--output-dir", str(tmp_path), "--duration", "3",
                        "--profile-interval", "1", "--output-retention", "1B", "--no-gpu"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    written = re.findall(r"wrote \S*/(cpu-\S+\.pb\.gz)", r.stderr)
    assert len(written) >= 2, r.stderr
    left = sorted(n for n in os.listdir(tmp_path) if n.endswith(".pb.gz"))
    assert left == [written[-1]], (left, r.stderr)
