# stacks.rb - known Ruby call chains, one per thread, for
# tests/test_ruby.py (see hot.rb for how a hot spot reports and spins):
#
#   chain:      <main> > block in <main> > Chain#outer > Chain#inner >
#               Mixin#mixed (a module's method) > Chain.sing (singleton)
#   dynamic:    <main> > block in <main> > Dyn#dynamic (define_method: a
#               block frame, "block in <class:Dyn>") > Dyn#method_missing
#               (called for the undefined #ghost)
#   required:   <main> > block in <main> > run_required >
#               Kernel#require_relative (C) > <top (required)> of required_hot.rb
#   class_body: <main> > block in <main> > <class:Body>
#   closure:    <main> > block in <main> > Closure#outer > block in outer >
#               Closure#inner: outer's locals escape to the heap (a lambda
#               captures them), so its control frame's ep is a heap env,
#               not a slot of the VM stack like its neighbours'
#
# Threads share the GVL: each spins while it holds it.
require_relative "hot"

module Mixin
  def mixed
    Chain.sing
  end
end

class Chain
  include Mixin

  def self.sing
    Hot.report("chain", caller_locations(0), "sing" => "Chain.sing",
               "mixed" => "Mixin#mixed", "inner" => "Chain#inner", "outer" => "Chain#outer")
    d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  end

  def outer
    inner
  end

  def inner
    mixed
  end
end

class Dyn
  define_method(:dynamic) { ghost }

  def method_missing(name, *args)
    return super unless name == :ghost

    Hot.report("dynamic", caller_locations(0),
               "method_missing" => "Dyn#method_missing")
    d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  end

  def respond_to_missing?(name, priv = false)
    name == :ghost || super
  end
end

class Closure
  def outer
    n = 1
    f = lambda { inner(n) } # outer's env moves to the heap
    f.call
  end

  def inner(n)
    Hot.report("closure", caller_locations(0), "inner" => "Closure#inner",
               "outer" => "Closure#outer")
    d = Hot.deadline; i = n - 1; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  end
end

def run_required
  require_relative "required_hot" # owners: Object#run_required, Kernel#require_relative
end

threads = [
  Thread.new { Chain.new.outer },
  Thread.new { Dyn.new.dynamic },
  Thread.new { run_required },
  Thread.new { Closure.new.outer },
  Thread.new do
    class Body
      Hot.report("class_body", caller_locations(0))
      d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
    end
  end,
]
threads.each(&:join)
