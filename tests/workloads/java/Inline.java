// SPDX-License-Identifier: GPL-2.0
/*
 * Inline.java - call chains C2 compiles with their small methods inlined,
 * for tests/test_hotspot_frames.py (test_inlined_frames). As Frames.java,
 * each hot spot prints every distinct stack the JVM gives there
 * (Throwable.getStackTrace(), innermost first: inlined methods included)
 * once, as a JSON line {"name", "tid", "stack", "lines"}, and spins for
 * PROFD_JAVA_SECS seconds (default 3), one spot after the other, on the
 * main thread:
 *   call  main -> callOuter -> callMiddle -> callInner -> spin: callMiddle
 *         and callInner inlined into callOuter's compiled code, spin never
 *         inlined (the test runs with -XX:CompileCommand=dontinline on it):
 *         spin's caller frame is callOuter's code at the call's return
 *         address, where the JVM records the inlined chain exactly;
 *   leaf  main -> leafOuter -> leafMiddle -> leafInner, all of it one
 *         compiled method: the hot loop is in leafInner's inlined code.
 */
package profd.frames;

import java.io.File;
import java.util.HashSet;

public class Inline {
    static final long SECS = Long.parseLong(System.getenv().getOrDefault("PROFD_JAVA_SECS", "3"));
    static volatile long sink;
    static final HashSet<String> seen = new HashSet<>();

    static String tid() {
        try {
            return new File("/proc/thread-self").getCanonicalFile().getName();
        } catch (Exception e) {
            return "0";
        }
    }

    static synchronized void report(String name) {
        StackTraceElement[] st = new Throwable().getStackTrace();
        StringBuilder stack = new StringBuilder(), lines = new StringBuilder();
        for (int i = 1; i < st.length; i++) {  // [0] is report() itself
            stack.append(i > 1 ? ", " : "").append('"').append(st[i].getClassName())
                 .append('.').append(st[i].getMethodName()).append('"');
            lines.append(i > 1 ? ", " : "").append(st[i].getLineNumber());
        }
        if (!seen.add(name + stack))
            return;
        System.out.println("{\"name\": \"" + name + "\", \"tid\": " + tid() +
                           ", \"stack\": [" + stack + "], \"lines\": [" + lines + "]}");
        System.out.flush();
    }

    static int spinPasses;

    static long spin(long x) {
        if ((spinPasses++ & 4095) == 0)
            report("call");
        for (int i = 0; i < 2000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L ^ (x >>> 29);
        return x;
    }

    static long callInner(long x) {
        return spin(x) + 1;
    }

    static long callMiddle(long x) {
        return callInner(x) ^ 3;
    }

    static long callOuter(long end) {
        long x = 1;
        while (System.nanoTime() < end)
            x = callMiddle(x);
        return x;
    }

    static int leafPasses;

    static long leafInner(long x) {
        if ((leafPasses++ & 4095) == 0)
            report("leaf");
        for (int i = 0; i < 2000; i++)
            x = (x ^ (x << 13)) * 0x9E3779B97F4A7C15L + i;
        return x;
    }

    static long leafMiddle(long x) {
        return leafInner(x) + 5;
    }

    static long leafOuter(long end) {
        long x = 7;
        while (System.nanoTime() < end)
            x = leafMiddle(x);
        return x;
    }

    public static void main(String[] args) {
        sink = callOuter(System.nanoTime() + SECS * 1000000000L);
        sink = leafOuter(System.nanoTime() + SECS * 1000000000L);
    }
}
