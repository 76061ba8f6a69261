"""src/gpu/ on synthetic records: build/tests/unit/test_gpu_correlate (no
BPF, no GPU): correlation either way round, graphs, timeouts, the bound,
names, malformed records and a fixed-seed fuzz, PC samples on a real ELF."""
import os
import subprocess

from conftest import BUILD


def test_gpu_correlate_unit():
    binary = os.path.join(BUILD, "tests", "unit", "test_gpu_correlate")
    assert os.access(binary, os.X_OK), "build/tests/unit/test_gpu_correlate missing: run make"
    r = subprocess.run([binary], capture_output=True, text=True, timeout=300,
                       cwd=os.path.dirname(BUILD))
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
