# core_stacks.rb - known Ruby stacks for tests/test_ruby_core.py.
#
# Three places run Ruby at once, each spinning for ever in rc_leaf once
# there: thread "t1" under methods, a block, Array#each and
# Integer#times; thread "t2" under a plain method chain; the main thread
# inside a fiber ("fiber"). Each records its own stack at its hot spot
# (caller_locations, leaf first) with its kernel thread id; the last one
# writes them all as JSON to ARGV[0]. ARGV[1]: seconds to run (exit!).
require "json"

$stacks = {}
$lock = Mutex.new
$out = ARGV[0]

def rc_leaf(role)
  labels = caller_locations(0).map(&:label)
  $lock.synchronize do
    $stacks[role] = { "tid" => Thread.current.native_thread_id, "stack" => labels }
    File.write($out + ".tmp", JSON.dump($stacks)) && File.rename($out + ".tmp", $out) if $stacks.size == 3
  end
  x = 0
  while true
    x = (x * 31 + 7) % 1000003
  end
end

def rc_times; 3.times { rc_leaf("t1") }; end
def rc_each; [1, 2].each { |v| rc_times }; end
def rc_level2; rc_each; end
def rc_level1; rc_level2; end

def rc_other_b; rc_leaf("t2"); end
def rc_other_a; rc_other_b; end

def rc_fib_a; rc_leaf("fiber"); end
def rc_start_fiber; Fiber.new { rc_fib_a }.resume; end

Thread.new { sleep((ARGV[1] || 5).to_f); exit!(0) }
Thread.new { rc_level1 }
Thread.new { rc_other_a }
rc_start_fiber
