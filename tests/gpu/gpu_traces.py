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


def kernel_samples(pprof, outdir):
    samples = []
    for path in gpu_profiles(outdir):
        counts = pprof_traces(pprof, path, "-sample_index=kernels")
        times = pprof_traces(pprof, path, "-sample_index=gpu_kernel_time")
        assert len(counts) == len(times), path
        for c, t in zip(counts, times):
            assert c["frames"] == t["frames"] and c["labels"] == t["labels"], path
            samples.append({"frames": c["frames"], "labels": c["labels"],
                            "kernels": c["value"], "ns": t["value"]})
    return samples


def pc_samples(pprof, outdir):
    samples = []
    for path in gpu_profiles(outdir, "gpu-pc"):
        samples += pprof_traces(pprof, path, "-sample_index=pc_samples")
    return samples


def is_subsequence(wanted, frames):
    """True if every name in @wanted appears in @frames in that order."""
    it = iter(frames)
    return all(any(w == f or f.startswith(w + " ") for f in it) for w in wanted)
