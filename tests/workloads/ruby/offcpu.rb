# Blocks in known Ruby chains and measures its own blocked time
# (tests/test_offcpu_runtimes.py): prints, per chain, the runtime's own
# view at the blocking call (caller_locations, this file's frames, leaf
# first) and the ns it spent in the blocking calls.
#
#   sleep   a_sleep -> b_sleep -> c_sleep -> sleep(0.02)
#   queue   consumer -> q_wait -> Thread::Queue#pop, fed every 15 ms
#   socket  sock_reader -> sock_wait -> IO#read, fed every 10 ms
#
# usage: offcpu.rb SECONDS
require "socket"

DUR = Float(ARGV[0])
NS = { "sleep" => 0, "queue" => 0, "socket" => 0 }
VIEW = {}

def mono_ns = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)

def timed(chain)
  VIEW[chain] ||= caller_locations(0).select { |l| l.path == __FILE__ }
                                     .map(&:label)
  t = mono_ns
  v = yield
  NS[chain] += mono_ns - t
  v
end

def c_sleep = timed("sleep") { sleep 0.02 }
def b_sleep = c_sleep
def a_sleep = b_sleep

Q = Thread::Queue.new
RD, WR = UNIXSocket.pair

def feeder(period)
  t_end = mono_ns + (DUR * 1e9).to_i
  yield(false) while mono_ns < t_end && sleep(period)
  sleep 0.05
  yield(true)
end

def q_wait = timed("queue") { Q.pop }
def consumer
  nil while q_wait
end

def sock_wait = timed("socket") { RD.read(1) }
def sock_reader
  nil while sock_wait == "x"
end

threads = [
  Thread.new { feeder(0.015) { |last| Q << !last } },
  Thread.new { consumer },
  Thread.new { feeder(0.010) { |last| WR.write(last ? "." : "x") } },
  Thread.new { sock_reader },
]
t_end = mono_ns + (DUR * 1e9).to_i
a_sleep while mono_ns < t_end
threads.each(&:join)
NS.each { |chain, ns| puts "#{chain} #{ns} #{VIEW[chain].join(';')}" }
