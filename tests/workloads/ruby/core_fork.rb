# core_fork.rb - a ruby that forks a child running Ruby (rc_child_work)
# while it runs rc_parent_work, both for ARGV[0] seconds; for
# tests/test_ruby_core.py (CRuby 3.1 keeps the parent's tid in the
# child's main thread).
def spin(t)
  x = 0
  x = (x * 31 + 7) % 1000003 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t
end
def rc_child_work(t) = spin(t)
def rc_parent_work(t) = spin(t)
t = Process.clock_gettime(Process::CLOCK_MONOTONIC) + ARGV[0].to_f
pid = fork { rc_child_work(t) }
rc_parent_work(t)
Process.wait(pid)
