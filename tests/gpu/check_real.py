"""check_real.py PPROF OUTDIR ITERS - the assertions of tests/gpu/real.sh
on the GPU profile of tests/gpu/real/real_app.cu, read through pprof."""
import collections
import sys

from gpu_traces import is_subsequence, kernel_samples


def main():
    pprof, outdir, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    samples = kernel_samples(pprof, outdir)
    assert samples, "no GPU kernel samples"
    by_kernel = collections.defaultdict(lambda: [0, 0])
    for s in samples:
        by_kernel[s["frames"][0]][0] += s["kernels"]
        by_kernel[s["frames"][0]][1] += s["ns"]
    for k, (n, ns) in sorted(by_kernel.items()):
        print(f"{k:40s} {n:6d} kernels {ns / 1e6:10.1f} ms")
    graphs = iters // 4
    want = {"matmul_kernel": iters + graphs, "relu_kernel": iters + graphs,
            "softmax_kernel": iters, "layernorm_kernel": graphs}
    for k, n in want.items():
        got = sum(v[0] for name, v in by_kernel.items() if name.startswith(k))
        assert got == n, f"{k}: {got} kernels in the profile, {n} launched"
    chains = {
        "matmul_kernel": ["launch_matmul", "forward", "train_step", "main"],
        "relu_kernel": ["launch_relu", "backward", "train_step", "main"],
        "softmax_kernel": ["launch_softmax", "forward", "train_step", "main"],
    }
    for k, chain in chains.items():
        direct = [s for s in samples if s["frames"][0].startswith(k) and
                  s["labels"].get("cuda_graph", "0") in ("0", "0 ")]
        ok = sum(s["kernels"] for s in direct if is_subsequence(chain, s["frames"][1:]))
        # the first launches may come before libcuda's unwind tables are built
        assert ok >= 0.9 * iters, f"{k}: {ok} of {iters} kernels on {' <- '.join(chain)}"
    graph = [s for s in samples if s["labels"].get("cuda_graph", "0").strip() != "0"]
    on_chain = sum(s["kernels"] for s in graph
                   if is_subsequence(["launch_graph", "run_graphs", "main"], s["frames"][1:]))
    assert on_chain >= 0.9 * 3 * graphs, f"graph kernels on launch_graph: {on_chain} of {3 * graphs}"
    # matmul spins 2 ms per launch (1 ms in the graph): its time is about right
    ms = sum(v[1] for name, v in by_kernel.items() if name.startswith("matmul_kernel")) / 1e6
    assert 0.5 * (2 * iters + graphs) < ms < 2.0 * (2 * iters + graphs), ms
    print("check_real: all checks hold")


if __name__ == "__main__":
    main()
