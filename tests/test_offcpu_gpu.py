"""Off-CPU time of a GPU-launching thread: waits on the GPU, marked as such.

tests/gpu/apps/gpu_app sync launches 20 ms "kernels" through the mock
libcuda and waits for each in a known chain, once through
cudaStreamSynchronize and once through cuCtxSynchronize; the mock
(MOCK_CUDA_SYNC_SLEEP=1) blocks there in the kernel (ppoll) until the
kernel's end, as libcuda's blocking sync waits in poll(). The program
measures the time it spent in each synchronize call. profd exec --off-cpu
--off-cpu-threshold 1 records every blocking switch; Google's pprof reads
the offcpu-*.pb.gz profiles: per chain, the off_cpu/nanoseconds of the
stacks holding it are within 10% of the program's figure, their kernel
frames show the poll, and each of them (and no other stack) carries the
label wait=gpu, which the GPU module decides (src/gpu/wait.c).
"""
import os
import subprocess

import pytest

from conftest import BUILD
from pprof_traces import pprof_traces

MOCK = os.path.join(BUILD, "tests", "gpu", "mock")
APP = os.path.join(BUILD, "tests", "gpu", "apps", "gpu_app")
LIB = os.path.join(BUILD, "libprofd_inject.so")

pytestmark = pytest.mark.skipif(
    not (os.path.exists(LIB) and os.path.exists(APP)),
    reason="no CUDA headers at build time: the GPU mocks were not built")

# what the program printed -> the chain (leaf first, consecutive frames)
CHAINS = {
    "sync_stream": ["cuStreamSynchronize", "cudaStreamSynchronize", "stream_wait",
                    "stream_step", "sync_loop", "main"],
    "sync_ctx": ["cuCtxSynchronize", "ctx_wait", "ctx_step", "sync_loop", "main"],
}


def has_run(frames, chain):
    return any(frames[i:i + len(chain)] == chain for i in range(len(frames) - len(chain) + 1))


def test_gpu_sync_waits(profd_bin, pprof, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, LD_LIBRARY_PATH=MOCK, MOCK_CUDA_SYNC_SLEEP="1",
               PROFD_CUPTI_LIBRARY=os.path.join(MOCK, "libcupti.so"))
    p = subprocess.run([profd_bin, "exec", "--output-dir", str(out), "--off-cpu",
                        "--off-cpu-threshold", "1", "--off-cpu-min-block", "0",
                        "--", APP, "sync", "10"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    want = {k: int(v) for k, v in (line.split() for line in p.stdout.splitlines()
                                   if line.split()[0] in CHAINS)}
    assert set(want) == set(CHAINS), p.stdout
    samples = [s for path in sorted(out.glob("offcpu-*.pb.gz"))
               for s in pprof_traces(pprof, str(path), "-sample_index=off_cpu", "-unit=ns")]
    assert samples, p.stderr[-3000:]
    got = dict.fromkeys(CHAINS, 0)
    for s in samples:
        name = next((n for n, c in CHAINS.items() if has_run(s["frames"], c)), None)
        if name:
            got[name] += s["value"]
            assert any("do_sys_poll" in f for f in s["frames"]), s
        # marked a GPU wait exactly when a CUDA synchronize call is on it
        gpu = name is not None or any("Synchronize" in f for f in s["frames"])
        assert (s["labels"].get("wait") == "gpu") == gpu, s
    for name, w in want.items():
        assert w >= 150e6, want  # ten 20 ms kernels, minus launch time
        assert abs(got[name] - w) <= 0.1 * w, (name, got, want, p.stderr[-2000:])
