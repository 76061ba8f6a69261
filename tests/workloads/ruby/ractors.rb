# ractors.rb - Ruby threads of three ractors, each spinning in a chain of
# its own, for tests/test_ruby.py (see hot.rb for how a hot spot reports
# and spins):
#
#   main:     <main> > Object#main_outer > Object#main_inner
#   ractor_a: block in <main> > Alpha#run > Alpha#step
#   ractor_b: block in <main> > Beta.run > Beta.middle > Beta.leaf
#
# A Ractor may touch no unshareable global, class variable or constant
# (Hot's report file and lock among them): each Ractor sends its
# caller_locations(0), as plain [label, path, absolute_path, lineno]
# arrays, and its native thread id to the main thread, which writes its
# report; the Ractor spins on the line after its Ractor.yield. Ruby warns
# "Ractor is experimental" on stderr.
require_relative "hot"

Loc = Struct.new(:label, :path, :absolute_path, :lineno)

# This thread's id and the stack @locs as plain data (sendable).
def self_report(locs)
  [Hot.tid, locs.map { |l| [l.label, l.path, l.absolute_path, l.lineno] }]
end

class Alpha
  def run(deadline)
    step(deadline)
  end

  def step(deadline)
    Ractor.yield self_report(caller_locations(0))
    d = deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  end
end

class Beta
  def self.run(deadline)
    middle(deadline)
  end

  def self.middle(deadline)
    leaf(deadline)
  end

  def self.leaf(deadline)
    Ractor.yield self_report(caller_locations(0))
    d = deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
  end
end

def main_outer
  main_inner
end

def main_inner
  Hot.report("main", caller_locations(0), "main_outer" => "Object#main_outer",
             "main_inner" => "Object#main_inner")
  d = Hot.deadline; i = 0; i += 1 until (i & 0xfffff) == 0 && Hot.now > d
end

ra = Ractor.new(Hot.deadline) { |d| Alpha.new.run(d) }
rb = Ractor.new(Hot.deadline) { |d| Beta.run(d) }
{ "ractor_a" => [ra, { "run" => "Alpha#run", "step" => "Alpha#step" }],
  "ractor_b" => [rb, { "run" => "Beta.run", "middle" => "Beta.middle",
                       "leaf" => "Beta.leaf" }] }.each do |name, (r, owners)|
  tid, locs = r.take
  Hot.report(name, locs.map { |a| Loc.new(*a) }, owners, tid)
end
main_outer
[ra, rb].each(&:take)
