// SPDX-License-Identifier: GPL-2.0
/*
 * Stubs.java - a hot leaf in a HotSpot StubRoutines stub, for
 * tests/test_hotspot_frames.py: main -> runCopy -> copyOuter -> copyLeaf,
 * whose System.arraycopy of a 4 MiB long[] (C2 calls the jlong arraycopy
 * stub, a leaf without a frame size: most samples are in it) runs for
 * PROFD_JAVA_SECS seconds (default 3). copyLeaf prints the stack the JVM
 * gives there (Throwable.getStackTrace(), innermost first), each distinct
 * one once, as one JSON line {"name": "copy", "tid": ..., "stack": [...],
 * "lines": [...]} (Frames.report()).
 */
package profd.frames;

public class Stubs {
    static final long SECS = Long.parseLong(System.getenv().getOrDefault("PROFD_JAVA_SECS", "3"));
    static final long[] SRC = new long[1 << 19];
    static final long[] DST = new long[1 << 19];
    static int passes;

    static long copyLeaf(int shift) {
        if ((passes++ & 255) == 0)
            Frames.report("copy");
        System.arraycopy(SRC, shift, DST, 0, SRC.length - shift);
        return DST[shift];
    }

    static long copyOuter(long end) {
        long x = 0;
        while (System.nanoTime() < end)
            x += copyLeaf((int) (x & 7));
        return x;
    }

    static void runCopy() {
        Frames.sink = copyOuter(System.nanoTime() + SECS * 1000000000L);
    }

    public static void main(String[] args) {
        for (int i = 0; i < SRC.length; i++)
            SRC[i] = i;
        runCopy();
    }
}
