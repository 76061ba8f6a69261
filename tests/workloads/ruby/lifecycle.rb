# lifecycle.rb MODE - Ruby processes that fork, exec and exit, for
# tests/test_ruby.py (see hot.rb for how a hot spot reports and spins).
#
#   fork:  the parent spins in parent_work; its forked child in
#          child_work (<main> > Kernel#fork (C) > block in <main> >
#          Object#child_work), each for the run's time.
#   forkfork: a child forks the grandchild and exits at once (as
#          Process.daemon does); the grandchild spins in grandchild_work.
#   exec:  runs briefly, then execs exec_target.rb in the same process,
#          which spins in after_exec.
#   exit:  forks 12 children one after another; each spins in
#          short_child for 0.25 s and is ended by its other thread
#          (Process.exit!) while its main thread spins: it exits
#          mid-sample. The parent waits (off CPU).
require_relative "hot"
require "rbconfig"

def parent_work
  Hot.report("parent", caller_locations(0),
             "parent_work" => "Object#parent_work")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

def child_work
  Hot.report("child", caller_locations(0), "child_work" => "Object#child_work",
             "fork" => "Kernel#fork")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

def short_child
  Hot.report("short_child", caller_locations(0), "short_child" => "Object#short_child",
             "fork" => "Kernel#fork", "times" => "Integer#times")
  i = 0; i += 1 while true
end

def grandchild_work
  Hot.report("grandchild", caller_locations(0),
             "grandchild_work" => "Object#grandchild_work", "fork" => "Kernel#fork")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

case ARGV[0]
when "forkfork"
  # as Process.daemon does: a child that forks and exits at once, its
  # child (the grandchild) spins; the main thread's tid is its grandparent's
  pid = fork do
    fork { grandchild_work }
    exit!(0)
  end
  Process.wait(pid)
  d = Hot.deadline; sleep 0.1 until Hot.now > d + 0.5
when "fork"
  pid = fork { Hot.restart; child_work }
  parent_work
  Process.wait(pid)
when "exec"
  exec(RbConfig.ruby, "--disable-gems", File.join(__dir__, "exec_target.rb"))
when "exit"
  12.times do
    pid = fork do
      Thread.new { sleep 0.25; Process.exit!(0) }
      short_child
    end
    Process.wait(pid)
  end
else
  abort "usage: lifecycle.rb fork|forkfork|exec|exit"
end
