# required_hot.rb - a hot spot in a required file's top level
# ("<top (required)>"), required by stacks.rb's run_required.
Hot.report("required", caller_locations(0),
           "run_required" => "Object#run_required",
           "require_relative" => "Kernel#require_relative")
d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
