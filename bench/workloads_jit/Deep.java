// bench/workloads_jit/Deep.java - a JVM whose main thread is DEPTH Java
// frames deep nearly all the time (bench/jit_bpf_cost.sh, issue 19):
// Deep.main -> Deep.rec x (DEPTH - 2) -> Deep.leaf, the leaf a loop of
// ~0.2 ms of arithmetic (no calls); the whole descent is run again and
// again, so rec and leaf get hot and are JIT-compiled (unless -Xint; with
// -XX:CompileCommand=dontinline,Deep::* each stays a frame of its own).
// Usage: java Deep DEPTH SECONDS. Exits after SECONDS, or on SIGTERM.
public class Deep {
    static long sink;

    static long leaf(long x) {
        for (int i = 0; i < 200000; i++)
            x = (x * 31 + i) ^ (x >>> 7);
        return x;
    }

    static long rec(int n, long x) {
        if (n == 0)
            return leaf(x);
        return rec(n - 1, x) + 1;
    }

    public static void main(String[] args) {
        int depth = Integer.parseInt(args[0]);
        long end = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        while (System.nanoTime() < end)
            sink += rec(depth - 3, sink);	// main + rec(depth-3..0) + leaf
        System.out.println(sink & 1);
    }
}
