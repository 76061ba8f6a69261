// SPDX-License-Identifier: GPL-2.0
/*
 * Churn.java - code cache churn for tests/test_hotspot_frames.py: four
 * threads, thread k running only class Churn$Pk's work() (k = 0..3),
 * each time in a class loaded anew by a fresh class loader, so that
 * each copy is compiled, its loader dropped, the class unloaded at the
 * next GC (one every 200 ms) and its nmethods flushed, their space
 * reused by the other threads' copies. Each thread prints one JSON line
 * {"name": "churn", "tid": KERNEL_TID, "cls": "profd.frames.Churn$Pk"}
 * and runs for PROFD_JAVA_SECS seconds (default 3). A frame of thread
 * k named after another Pj is a misnamed frame.
 */
package profd.frames;

import java.io.File;
import java.io.InputStream;

public class Churn {
    static final long SECS = Long.parseLong(
            System.getenv().getOrDefault("PROFD_JAVA_SECS", "3"));
    static volatile long sink;

    public interface Work {
        long work(long x);
    }

    public static class P0 implements Work {
        public long work(long x) {
            for (int i = 0; i < 3000; i++)
                x = x * 31 + (x >>> 3) + i;
            return x;
        }
    }

    public static class P1 implements Work {
        public long work(long x) {
            for (int i = 0; i < 3000; i++)
                x = x * 37 + (x >>> 5) + i;
            return x;
        }
    }

    public static class P2 implements Work {
        public long work(long x) {
            for (int i = 0; i < 3000; i++)
                x = x * 41 + (x >>> 7) + i;
            return x;
        }
    }

    public static class P3 implements Work {
        public long work(long x) {
            for (int i = 0; i < 3000; i++)
                x = x * 43 + (x >>> 11) + i;
            return x;
        }
    }

    /* Defines class @name from its class file; everything else from the app's loader. */
    static class Loader extends ClassLoader {
        final String name;
        final byte[] bytes;

        Loader(String name, byte[] bytes) {
            super(null);
            this.name = name;
            this.bytes = bytes;
        }

        @Override
        protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
            if (!n.equals(name))
                return Churn.class.getClassLoader().loadClass(n);
            synchronized (getClassLoadingLock(n)) {
                Class<?> c = findLoadedClass(n);
                return c != null ? c : defineClass(n, bytes, 0, bytes.length);
            }
        }
    }

    static String tid() {
        try {
            return new File("/proc/thread-self").getCanonicalFile().getName();
        } catch (Exception e) {
            return "0";
        }
    }

    static void churn(String cls, long end) throws Exception {
        byte[] bytes;
        String file = cls.substring(cls.lastIndexOf('.') + 1) + ".class";
        try (InputStream in = Churn.class.getResourceAsStream(file)) {
            bytes = in.readAllBytes();
        }
        synchronized (Churn.class) {
            System.out.println("{\"name\": \"churn\", \"tid\": " + tid() + ", \"cls\": \"" +
                               cls + "\"}");
            System.out.flush();
        }
        while (System.nanoTime() < end) {
            Work w = (Work) new Loader(cls, bytes).loadClass(cls)
                    .getDeclaredConstructor().newInstance();
            long x = 1;
            for (int i = 0; i < 2000; i++)
                x = w.work(x);
            sink = x;
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + SECS * 1000000000L;
        Thread[] ts = new Thread[4];
        for (int k = 0; k < ts.length; k++) {
            String cls = "profd.frames.Churn$P" + k;
            ts[k] = new Thread(() -> {
                try {
                    churn(cls, end);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "churn-" + k);
            ts[k].start();
        }
        while (System.nanoTime() < end) {
            System.gc();
            Thread.sleep(200);
        }
        for (Thread t : ts)
            t.join();
    }
}
