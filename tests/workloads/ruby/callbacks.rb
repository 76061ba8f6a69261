# callbacks.rb - Ruby -> C -> Ruby chains and a Fiber, for
# tests/test_ruby.py (see hot.rb for how a hot spot reports and spins):
#
#   sort_by: <main> > block in <main> > Sorter#run > Enumerable#sort_by (C)
#            > Array#each (C) > block in run
#   times:   <main> > block in <main> > Looper#run > Integer#times (C) >
#            block in run > Array#each (C) > block (2 levels) in run
#   fiber:   (the main thread, in a Fiber: only the fiber's frames)
#            block in fiber_main > Object#fib_a > Object#fib_b
#
# The C methods' native frames (libruby) lie between the Ruby frames that
# call them and the blocks they yield to.
require_relative "hot"

class Sorter
  def run
    [1].sort_by do |x|
      Hot.report("sort_by", caller_locations(0), "run" => "Sorter#run",
                 "each" => "Array#each", "sort_by" => "Enumerable#sort_by")
      d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
      x
    end
  end
end

class Looper
  def run
    1.times do
      [1].each do
        Hot.report("times", caller_locations(0), "run" => "Looper#run",
                   "times" => "Integer#times", "each" => "Array#each")
        d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
      end
    end
  end
end

def fib_b
  Hot.report("fiber", caller_locations(0), "fib_b" => "Object#fib_b",
             "fib_a" => "Object#fib_a")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

def fib_a
  fib_b
end

def fiber_main
  Fiber.new { fib_a }.resume
end

threads = [Thread.new { Sorter.new.run }, Thread.new { Looper.new.run }]
fiber_main
threads.each(&:join)
