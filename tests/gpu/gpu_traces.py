"""GPU profiles read through Google's pprof (the oracle).

kernel_samples() runs `pprof -traces` twice over gpu-*.pb.gz (once per
sample value) and pairs the blocks: each sample is a dict with "frames"
(leaf = the kernel's name, then the launching CPU stack, leaf first),
"labels", "kernels" (count) and "ns" (GPU time).
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pprof_traces import pprof_traces  # noqa: E402


def gpu_profiles(outdir, kind="gpu"):
    return sorted(p for p in glob.glob(os.path.join(outdir, f"{kind}-*.pb.gz"))
                  if kind != "gpu" or not os.path.basename(p).startswith("gpu-pc-"))


def _by_key(blocks):
    """-traces blocks summed by (frames, labels): pprof orders them by value."""
    out = {}
    for b in blocks:
        key = (tuple(b["frames"]), tuple(sorted(b["labels"].items())))
        out[key] = out.get(key, 0) + b["value"]
    return out


def kernel_samples(pprof, outdir):
    samples = []
    for path in gpu_profiles(outdir):
        counts = _by_key(pprof_traces(pprof, path, "-sample_index=kernels"))
        times = _by_key(pprof_traces(pprof, path, "-sample_index=gpu_kernel_time", "-unit=ns"))
        assert counts.keys() == times.keys(), path
        for key, n in counts.items():
            samples.append({"frames": list(key[0]), "labels": dict(key[1]),
                            "kernels": n, "ns": times[key]})
    return samples


def pc_samples(pprof, outdir):
    samples = []
    for path in gpu_profiles(outdir, "gpu-pc"):
        samples += pprof_traces(pprof, path, "-sample_index=pc_samples")
    return samples


def is_subsequence(wanted, frames):
    """True if every name in @wanted appears in @frames in that order (a
    frame may add its file, or a C++ function its parameter list:
    "launch_matmul(float*, CUstream_st*)")."""
    it = iter(frames)
    return all(any(w == f or f.startswith((w + " ", w + "(")) for f in it) for w in wanted)
