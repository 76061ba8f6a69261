# deep.rb [SECONDS] - a Ruby process whose main thread spins RUBY_COST_DEPTH
# (default 50) Ruby frames deep: <main> > Object#deep x (DEPTH - 1), the
# innermost in a loop of VM instructions only (no method call but a clock
# read every 2^20 iterations). For bench/ruby_cost.sh (one per CPU) and
# tests/test_ruby.py (test_deep_stack, through tests/workloads/ruby/hot.rb:
# it reports its stack there when $PROFD_RUBY_OUT is set). Spins SECONDS
# (default $PROFD_RUBY_SECS, else 4), then exits; SIGTERM ends it too.
require_relative "../../tests/workloads/ruby/hot"

DEPTH = Integer(ENV.fetch("RUBY_COST_DEPTH", "50"))
Hot.restart(Float(ARGV[0])) if ARGV[0]

def deep(n)
  if n.zero?
    Hot.report("deep", caller_locations(0), "deep" => "Object#deep")
    d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  else
    deep(n - 1)
  end
end

deep(DEPTH - 2)
