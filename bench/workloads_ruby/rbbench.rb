# rbbench.rb - CPU-bound Ruby work with an ordinary stack, for
# bench/ruby_overhead.sh (run with `ruby --disable-gems`).
#
#   ruby rbbench.rb ROUNDS JOBS   fixed work: forks JOBS workers, each runs
#                                 ROUNDS rounds, and prints when all exited
#                                   wall_s=W cpu_s=C check=K pids=P,..
#                                 W: first fork to last exit; C: the
#                                 workers' user + system CPU (Process.times
#                                 of the reaped children); K: worker 0's
#                                 checksum (the same for the same ROUNDS);
#                                 P: the workers' pids.
#   ruby rbbench.rb --for SECONDS one process running rounds until SECONDS
#                                 have passed (0: until SIGTERM).
#
# A round is a recursive method and a block-heavy loop through C methods
# (roughly 40 % and 60 % of the time):
#   <main> [> Kernel#loop > block in <main>: --for] > Object#worker >
#   Integer#times > block in Object#worker > RbBench.round >
#     RbBench::Fib#fib x 1..23, or
#     RbBench::Table#churn > Integer#times > block in RbBench::Table#churn >
#       Array#each > block (2 levels) in RbBench::Table#churn >
#       RbBench::Table#mix, or
#     RbBench::Table#digest > Array#map > block in RbBench::Table#digest
module RbBench
  FIB_N = 23
  CHURN_REPS = 500

  class Fib
    def fib(n)
      n < 2 ? n : fib(n - 1) + fib(n - 2)
    end
  end

  class Table
    def initialize
      @items = Array.new(64) { |i| i * 7 + 1 }
    end

    def mix(acc, x, r)
      (acc * 31 + x * r) & 0xffffff
    end

    def churn(reps)
      acc = 0
      reps.times do |r|
        @items.each { |x| acc = mix(acc, x, r) }
      end
      acc
    end

    def digest(seed)
      @items.map { |x| (x ^ seed) & 0xff }.sum
    end
  end

  def self.round(r)
    t = Table.new
    Fib.new.fib(FIB_N) + t.churn(CHURN_REPS) + t.digest(r)
  end
end

def worker(rounds)
  sum = 0
  rounds.times { |r| sum = (sum + RbBench.round(r)) & 0xffffffff }
  sum
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

if ARGV[0] == "--for"
  secs = Float(ARGV[1] || "0")
  trap("TERM") { exit 0 }
  t_end = now + secs
  loop do
    worker(5)
    break if secs > 0 && now > t_end
  end
  exit 0
end

rounds = Integer(ARGV[0] || "100")
jobs = Integer(ARGV[1] || "1")
rd, wr = IO.pipe
t0 = now
pids = Array.new(jobs) do |j|
  fork do
    rd.close
    s = worker(rounds)
    wr.write("#{s}\n") if j.zero?
    exit! 0
  end
end
wr.close
check = rd.read.strip
statuses = pids.map { |p| Process.wait2(p)[1] }
wall = now - t0
raise "a worker failed" unless statuses.all?(&:success?)

tms = Process.times
printf("wall_s=%.3f cpu_s=%.3f check=%s pids=%s\n", wall, tms.cutime + tms.cstime, check,
       pids.join(","))
