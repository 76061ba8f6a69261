"""tests/gpu/real.sh: a real CUDA program under `profd exec` on a real GPU.
Skipped (real.sh exits 77) on machines without an NVIDIA GPU or nvcc."""
import os
import subprocess

import pytest

from conftest import ROOT


def test_real_gpu(profd_bin, pprof, tmp_path):
    r = subprocess.run(["sh", os.path.join(ROOT, "tests", "gpu", "real.sh"), str(tmp_path)],
                       env=dict(os.environ, PPROF=pprof), capture_output=True, text=True,
                       timeout=900)
    if r.returncode == 77:
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "check_real: all checks hold" in r.stdout
