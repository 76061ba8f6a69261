// bench/workloads_jit/JvmBench.java - a JVM workload for bench/jit_stacks.sh
// and bench/jit_overhead.sh (issue 19): three worker threads of its own,
// each with its own kind of work, all JIT-compiled once hot:
//   "collections"  HashMap/TreeMap/ArrayList/ArrayDeque of boxed keys
//   "strings"      StringBuilder, String.split, toUpperCase, String.format
//   "sorter"       Collections.sort of records with a Comparator (a
//                  comparing().thenComparing() chain and a lambda) that
//                  TimSort calls back
// The main thread starts them and sleeps. Usage: java JvmBench [SECONDS]
// (0 or none: until killed). Prints "ready" once every worker has run one
// round. No JVM flags needed.
import java.util.*;
import java.util.concurrent.CountDownLatch;

public class JvmBench {
    static volatile long sink;
    static final CountDownLatch READY = new CountDownLatch(3);

    static final class Rec {
        final String name;
        final int score;
        final long stamp;
        Rec(String name, int score, long stamp) { this.name = name; this.score = score; this.stamp = stamp; }
        String name() { return name; }
        int score() { return score; }
    }

    static long collectionsRound(int n) {
        Map<String, Integer> counts = new HashMap<>();
        List<Integer> list = new ArrayList<>();
        Deque<Long> dq = new ArrayDeque<>();
        for (int i = 0; i < n; i++) {
            String k = "k" + (i * 7919 % 1013);
            counts.merge(k, 1, Integer::sum);
            list.add(i ^ (i >>> 3));
            dq.addLast((long) i * 31);
            if (dq.size() > 64) dq.pollFirst();
        }
        TreeMap<Integer, String> tree = new TreeMap<>();
        for (Map.Entry<String, Integer> e : counts.entrySet())
            tree.put(e.getKey().hashCode() ^ e.getValue(), e.getKey());
        long s = 0;
        for (int v : list) s += v;
        return s + tree.firstKey() + dq.peekLast();
    }

    static long stringsRound(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++)
            sb.append("word").append(i % 97).append(i % 3 == 0 ? ',' : ' ');
        String[] parts = sb.toString().split("[ ,]");
        long s = 0;
        for (String p : parts) {
            String u = p.toUpperCase(Locale.ROOT);
            if (u.startsWith("WORD1")) s += u.length();
            s += u.indexOf('D');
        }
        s += String.format("%d-%s", n, parts[parts.length / 2]).length();
        return s;
    }

    static final Comparator<Rec> BY_SCORE_NAME =
        Comparator.comparingInt(Rec::score).thenComparing(Rec::name);

    static long sorterRound(int n, Random rnd) {
        List<Rec> recs = new ArrayList<>(n);
        for (int i = 0; i < n; i++)
            recs.add(new Rec("r" + rnd.nextInt(500), rnd.nextInt(1000), rnd.nextLong()));
        Collections.sort(recs, BY_SCORE_NAME);
        recs.sort((a, b) -> Long.compare(a.stamp % 1009, b.stamp % 1009));
        return recs.get(0).score + recs.get(n - 1).stamp;
    }

    static Thread worker(String name, Runnable round, long deadline) {
        Thread t = new Thread(() -> {
            boolean first = true;
            while (deadline == 0 || System.nanoTime() < deadline) {
                round.run();
                if (first) { READY.countDown(); first = false; }
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        double secs = args.length > 0 ? Double.parseDouble(args[0]) : 0;
        long deadline = secs > 0 ? System.nanoTime() + (long) (secs * 1e9) : 0;
        Random rnd = new Random(42);
        List<Thread> ts = List.of(
            worker("collections", () -> sink += collectionsRound(4000), deadline),
            worker("strings", () -> sink += stringsRound(2000), deadline),
            worker("sorter", () -> sink += sorterRound(3000, rnd), deadline));
        READY.await();
        System.out.println("ready");
        System.out.flush();
        for (Thread t : ts) t.join();
    }
}
