# short_lived.rb DIR N MS - load N files written to DIR, each defining a
# method of its own (hot_I in gen_I.rb) that spins MS milliseconds once:
# code that runs only a few samples' worth of time, then never again (as a
# request's rarely used path or a one-off job step does). No allocation in
# the spin, so no GC runs in it. For tests/test_ruby.py: each method's
# samples name it, from its first.
dir, n, ms = ARGV[0], Integer(ARGV[1]), Float(ARGV[2])
n.times do |i|
  path = File.join(dir, "gen_#{i}.rb")
  File.write(path, <<~RUBY)
    def hot_#{i}(secs)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
      x = 0
      while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        x += 1
      end
      x
    end
  RUBY
  load path
  send("hot_#{i}", ms / 1000.0)
end
