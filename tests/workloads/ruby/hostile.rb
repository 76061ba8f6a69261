# hostile.rb MODE - a Ruby process that overwrites its own VM stack (the
# control frames profd's walker reads) through Fiddle, then spins in
# victim for the run's time, for tests/test_ruby.py. Layout: CRuby 3.1 on
# x86_64 (src/ruby/offsets.c); checked before anything is written (exit 3
# and "layout?" on stdout when it does not hold).
#
#   <main> > outer > victim: outer's and <main>'s control frames are
#   overwritten, victim's (the running one) is left alone:
#     garbage: outer.iseq -> a string of random bytes (mapped, not an
#              iseq), outer.pc random; <main>.iseq and .ep -> unmapped
#     self:    outer.iseq -> victim's own iseq with a pc outside it;
#              <main>.ep -> outer's ep (a cycle of method entries)
#
# GC is off (it would mark the bogus frames and crash Ruby); victim never
# returns: after $PROFD_RUBY_SECS (default 4) it leaves by Process.exit!.
# Prints "ready" once written.
require "fiddle"

GC.disable
DEADLINE = Process.clock_gettime(Process::CLOCK_MONOTONIC) +
           Float(ENV.fetch("PROFD_RUBY_SECS", "4"))

def clock
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
JUNK = Random.new(42).bytes(4096)

def u64(addr)
  Fiddle::Pointer.new(addr)[0, 8].unpack1("Q")
end

def put(addr, value)
  Fiddle::Pointer.new(addr)[0, 8] = [value].pack("Q")
end

# rb_iseq_t * of a method (RTypedData.data of its ISeq wrapper).
def iseq_of(name)
  u64(Fiddle.dlwrap(RubyVM::InstructionSequence.of(method(name))) + 32)
end

CFP_SIZE = 64
CFP_PC = 0
CFP_ISEQ = 16
CFP_EP = 32

def corrupt(mode)
  th = u64(Fiddle.dlwrap(Thread.current) + 32)		# RTypedData.data
  ec = u64(th + 40)					# rb_thread_t.ec
  unless u64(ec + 48) == th				# ec->thread_ptr
    puts "layout?"
    exit 3
  end
  stack = u64(ec)
  stack_end = stack + u64(ec + 8) * 8
  cfp = u64(ec + 16)
  outer_iseq = iseq_of(:outer)
  frames = []
  while cfp + CFP_SIZE <= stack_end
    frames << cfp
    cfp += CFP_SIZE
  end
  outer = frames.find { |f| u64(f + CFP_ISEQ) == outer_iseq }
  unless outer && frames.last > outer
    puts "layout?"
    exit 3
  end
  main = frames[frames.index(outer) + 1]
  junk = Fiddle::Pointer[JUNK].to_i
  case mode
  when "garbage"
    put(outer + CFP_ISEQ, junk + 64)
    put(outer + CFP_PC, u64(junk + 8))
    put(main + CFP_ISEQ, 0xdead_beef_000)
    put(main + CFP_EP, 0x1000)
  when "self"
    put(outer + CFP_ISEQ, iseq_of(:victim))
    put(outer + CFP_PC, junk)
    put(main + CFP_EP, u64(outer + CFP_EP))
  else
    abort "usage: hostile.rb garbage|self"
  end
end

def victim(mode)
  corrupt(mode)
  puts "ready"
  $stdout.flush
  d = DEADLINE; i = 0; i += 1 until (i & 0xfffff) == 0 && clock > d
  Process.exit!(0)	# no unwinding through the bogus frames
end

def outer(mode)
  victim(mode)
end

outer(ARGV[0])
