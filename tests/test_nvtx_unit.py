"""src/nvtx/ on synthetic NVTX batch records: build/tests/unit/test_nvtx
(no BPF, no GPU): the clock, span trees of push/pop and start/end ranges
(an end arriving before its start), marks as span events and logs, the
budget, unmatched pops and ends, process exit and stop, strings in chunks
and their bounds, names and payloads, malformed records, a full queue,
and a fixed-seed fuzz of random records."""
import os
import subprocess

from conftest import BUILD


def test_nvtx_unit():
    binary = os.path.join(BUILD, "tests", "unit", "test_nvtx")
    assert os.access(binary, os.X_OK), "build/tests/unit/test_nvtx missing: run make"
    r = subprocess.run([binary], capture_output=True, text=True, timeout=300,
                       cwd=os.path.dirname(BUILD))
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
