# exec_target.rb - what lifecycle.rb exec execs: spins in after_exec.
require_relative "hot"

def after_exec
  Hot.report("after_exec", caller_locations(0),
             "after_exec" => "Object#after_exec")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

after_exec
