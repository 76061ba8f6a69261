# core_scribble.rb - a Ruby process that scribbles over what profd's
# walker reads, for tests/test_ruby_core.py (CRuby 3.1 x86-64 layouts).
#
#   ruby core_scribble.rb fake_ec GO READY  - the main thread's
#       rb_thread_t.ec -> a fake execution context full of garbage
#   ruby core_scribble.rb bad_ep GO READY   - the caller frame of the hot
#       method (rc_outer's) gets an ep that points at unmapped memory
#
# It spins until the file GO exists (the test makes it once profd has
# attached, or at once), scribbles, writes READY, then spins in rc_victim
# for ever without allocating (so the GC, which would read the same
# memory, never runs). Stop it with SIGKILL: with a fake ec it never
# sees a signal.
require "fiddle"

def rd(addr) = Fiddle::Pointer.new(addr)[0, 8].unpack1("Q")
def wr(addr, v) = Fiddle::Pointer.new(addr)[0, 8] = [v].pack("Q")

VM_MAIN_THREAD, TH_EC, EC_CFP, CFP_SIZE, CFP_ISEQ, CFP_EP = 40, 40, 16, 64, 16, 32

def spin_until(path)
  x = 0
  until File.exist?(path)
    100_000.times { x = (x * 31 + 7) % 1000003 }
  end
end

def scribble(mode)
  vm = rd(Fiddle::Handle::DEFAULT["ruby_current_vm_ptr"])
  th = rd(vm + VM_MAIN_THREAD)
  ec = rd(th + TH_EC)
  if mode == "fake_ec"
    $fake = Fiddle::Pointer.malloc(4096)
    $fake[0, 4096] = "\x41" * 4096
    wr(th + TH_EC, $fake.to_i)
  else
    iseqw = RubyVM::InstructionSequence.of(method(:rc_outer))
    iseq = rd(Fiddle.dlwrap(iseqw) + 32)	# RTypedData.data
    cfp = rd(ec + EC_CFP)
    cfp += CFP_SIZE until rd(cfp + CFP_ISEQ) == iseq
    wr(cfp + CFP_EP, 0x1000)
  end
end

def rc_victim(mode, go, ready)
  spin_until(go)
  scribble(mode)
  File.write(ready, "ready")
  x = 0
  while true
    x = (x * 31 + 7) % 1000003
  end
end

def rc_outer(mode, go, ready)
  rc_victim(mode, go, ready)
end

rc_outer(*ARGV[0, 3])
