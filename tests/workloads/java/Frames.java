// SPDX-License-Identifier: GPL-2.0
/*
 * Frames.java - Java call chains with known stacks, for
 * tests/test_hotspot_frames.py. Each hot spot prints the stacks the JVM
 * itself gives there (Throwable.getStackTrace(), innermost first), each
 * distinct one once, looked at every 256th pass, as one JSON line
 * {"name": ..., "tid": ..., "stack": [...], "lines": [...]}, and spins for
 * PROFD_JAVA_SECS seconds (default 3):
 *   hot     main -> runHot -> hotOuter -> hotMiddle -> hotLeaf (called in
 *           a loop: compiled by C1 then C2), on the main thread, while
 *   worker  Frames$Worker.run -> workA -> workB spins on a second thread;
 *   sort    main -> runSort -> Arrays.sort(.., SlowCmp) -> SlowCmp.compare.
 * The tid is the thread's kernel id (from /proc/thread-self).
 */
package profd.frames;

import java.io.File;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;

public class Frames {
    static final long SECS = Long.getLong("secs",
            Long.parseLong(System.getenv().getOrDefault("PROFD_JAVA_SECS", "3")));
    static volatile long sink;

    static String tid() {
        try {
            return new File("/proc/thread-self").getCanonicalFile().getName();
        } catch (Exception e) {
            return "0";
        }
    }

    static final HashSet<String> seen = new HashSet<>();

    static synchronized void report(String name) {
        StackTraceElement[] st = new Throwable().getStackTrace();
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i < st.length; i++) {  // [0] is report() itself
            if (i > 1)
                sb.append(", ");
            sb.append('"').append(st[i].getClassName()).append('.')
              .append(st[i].getMethodName()).append('"');
        }
        String stack = sb.toString();
        if (!seen.add(name + stack))
            return;
        StringBuilder lines = new StringBuilder();
        for (int i = 1; i < st.length; i++)
            lines.append(i > 1 ? ", " : "").append(st[i].getLineNumber());
        System.out.println("{\"name\": \"" + name + "\", \"tid\": " + tid() +
                           ", \"stack\": [" + stack + "], \"lines\": [" + lines + "]}");
        System.out.flush();
    }

    static int hotPasses;

    static long hotLeaf(long x) {
        if ((hotPasses++ & 255) == 0)
            report("hot");
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L ^ (x >>> 29);
        return x;
    }

    static long hotMiddle(long end) {
        long x = 1;
        while (System.nanoTime() < end)
            x = hotLeaf(x);
        return x;
    }

    static long hotOuter(long end) {
        return hotMiddle(end) + 1;
    }

    static void runHot() {
        sink = hotOuter(System.nanoTime() + SECS * 1000000000L);
    }

    static class Worker extends Thread {
        final long end;
        int passes;

        Worker(long end) {
            super("profd-worker");
            this.end = end;
        }

        long workB(long x) {
            if ((passes++ & 255) == 0)
                report("worker");
            for (int i = 0; i < 20000; i++)
                x = (x ^ (x << 13)) * 0x9E3779B97F4A7C15L + i;
            return x;
        }

        long workA() {
            long x = 7;
            while (System.nanoTime() < end)
                x = workB(x);
            return x;
        }

        @Override
        public void run() {
            sink = workA();
        }
    }

    static class SlowCmp implements Comparator<Integer> {
        int passes;

        @Override
        public int compare(Integer a, Integer b) {
            // often: TimSort reaches compare by several callers (gallopLeft
            // is rare), each a stack the samples may show
            if ((passes++ & 15) == 0)
                report("sort");
            long x = a;
            for (int i = 0; i < 2000; i++)
                x = x * 31 + (x >>> 7) + i;
            sink = x;
            return Integer.compare(a, b);
        }
    }

    static void runSort() {
        long end = System.nanoTime() + SECS * 1000000000L;
        SlowCmp cmp = new SlowCmp();
        while (System.nanoTime() < end) {
            Integer[] a = new Integer[4096];
            for (int i = 0; i < a.length; i++)
                a[i] = (i * 7919) % 4099;
            Arrays.sort(a, cmp);
            sink = a[0];
        }
    }

    public static void main(String[] args) throws Exception {
        Worker w = new Worker(System.nanoTime() + SECS * 1000000000L);
        w.start();
        runHot();
        w.join();
        runSort();
    }
}
