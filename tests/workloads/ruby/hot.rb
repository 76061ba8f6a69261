# hot.rb - the oracle side of tests/test_ruby.py, shared by the Ruby
# workloads here (required with require_relative; run them with
# `ruby --disable-gems`).
#
# A hot spot is a method, block or body that reports the Ruby stack it
# will spin under, as Ruby itself sees it (caller_locations(0): label,
# path, line per frame, leaf first), then spins on the very next line
# until the run's deadline:
#
#   Hot.report("name", caller_locations(0), "bar" => "Foo#bar")
#   d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
#
# The spin line is pure VM instructions (no method call but a clock read
# every 2^20 iterations), so a sample taken there has exactly the reported
# frames; the leaf's line is replaced by the spin line, the first line
# after the report that holds "i += 1" (caller_locations gives the report
# line). Optional owners map a method label to the name
# profd must give it ("Foo#bar", "Foo.sing", "Array#each"): a method whose
# owner the script knows.
#
# Each report is one JSON line appended to $PROFD_RUBY_OUT (none when it
# is not set): {"name",
# "pid", "tid" (native thread id), "frames": [{"label", "path", "line",
# "cfunc", "owner"}]}. caller_locations cannot tell a C method's frame from
# a Ruby one; CFUNCS lists the C methods these workloads call (their
# frames carry the caller's path and line there, and none in profd).
# The deadline is $PROFD_RUBY_SECS (default 4) after this file loaded.
require "json"

module Hot
  OUT = ENV["PROFD_RUBY_OUT"]
  SECS = Float(ENV.fetch("PROFD_RUBY_SECS", "4"))
  CFUNCS = %w[each times sort_by loop fork resume require_relative join exec].freeze
  LOCK = Mutex.new
  @deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECS

  def self.now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # The end of the spin: the same for every hot spot of a process (a
  # forked child or an exec'd script starts its own with restart).
  def self.deadline
    @deadline
  end

  def self.restart(secs = SECS)
    @deadline = now + secs
  end

  # The first line after line @after of @path that holds "i += 1".
  def self.spin_line(path, after)
    File.foreach(path).with_index(1) do |text, n|
      return n if n > after && text.include?("i += 1")
    end
    raise "#{path}:#{after}: no spin line after the report"
  end

  # A native thread id that is right after fork too (Ruby's is cached).
  def self.tid
    File.readlink("/proc/thread-self").split("/").last.to_i
  end

  # @locs: Thread::Backtrace::Locations, or objects that answer the same
  # (a Ractor sends its own as plain data: ractors.rb); @tid: the thread
  # that spins, when it is not the caller's.
  def self.report(name, locs, owners = {}, tid = self.tid)
    line = spin_line(locs[0].absolute_path || locs[0].path, locs[0].lineno)
    frames = locs.each_with_index.map do |l, i|
      { "label" => l.label, "path" => l.absolute_path || l.path,
        "line" => i.zero? ? line : l.lineno, "cfunc" => CFUNCS.include?(l.label),
        "owner" => owners[l.label] }
    end
    rec = { "name" => name, "pid" => Process.pid,
            "tid" => tid, "frames" => frames }
    return unless OUT

    LOCK.synchronize do
      File.open(OUT, "a") { |f| f.write(JSON.generate(rec) + "\n") }
    end
  end
end
