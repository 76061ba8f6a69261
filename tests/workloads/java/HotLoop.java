// A JVM workload for tests/test_hotspot.py: methods of a package class and
// of a nested class and a lambda that get JIT-compiled (C1, then C2), a
// comparator the
// runtime's sort calls, and a thread of its own. Prints "ready" once every
// hot method has been called often enough to be compiled, then runs until
// killed.
package profd.hot;

import java.util.Arrays;
import java.util.Comparator;
import java.util.function.LongUnaryOperator;

public class HotLoop {
    static final class Inner {
        static long mix(long a, long b) {
            return (a * 31) ^ (b >>> 3) ^ (a << 7);
        }
    }

    // a lambda: its class is hidden ("HotLoop$$Lambda.../0x...")
    static final LongUnaryOperator STEP = x -> x * 31 + 7;

    static long work(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s = STEP.applyAsLong(Inner.mix(s, i));
        return s;
    }

    static Integer[] data = new Integer[512];

    static long sortOnce() {
        for (int i = 0; i < data.length; i++)
            data[i] = (i * 7919) % 1013;
        Arrays.sort(data, new Comparator<Integer>() {
            public int compare(Integer a, Integer b) {
                return Integer.compare(a % 97, b % 97);
            }
        });
        return data[0];
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            long s = 0;
            while (true)
                s += sortOnce();
        }, "sorter");
        t.setDaemon(true);
        t.start();
        long sum = 0;
        for (int i = 0; i < 3000; i++)
            sum += work(10000);
        System.out.println("ready " + (sum & 1));
        System.out.flush();
        while (true)
            sum += work(100000);
    }
}
