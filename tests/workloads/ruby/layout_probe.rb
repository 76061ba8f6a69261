# layout_probe.rb - check profd's CRuby layout table against the live
# interpreter running this script (tests/test_ruby_offsets.py).
#
# Usage: ruby layout_probe.rb OFFSETS_JSON
# OFFSETS_JSON holds src/ruby/offsets.c's entry for this version (field ->
# number). The script reads its own interpreter's memory with Fiddle at
# those offsets (every read checked against /proc/self/maps first, so a
# wrong offset is a failed check, never a crash) and compares what it finds
# with what Ruby itself reports: the thread list and native thread ids,
# the VM's ractor list (a second Ractor is started for it, its thread's
# id sent back), the execution context, every control frame's iseq label, path and first
# line against caller_locations and Method#source_location, the method
# entry of method frames, and C frames. Prints one JSON object:
# {"ok": bool, "checks": n, "failed": [descriptions]}.
require 'fiddle'
require 'json'

OFF = JSON.parse(File.read(ARGV[0]))

class Mem
  def initialize
    refresh
  end

  # Read the mappings again (the heap grows: a Ractor's start adds pages).
  def refresh
    @ranges = File.readlines('/proc/self/maps').filter_map do |l|
      a, perms = l.split(' ', 3)
      next unless perms.start_with?('r')
      lo, hi = a.split('-').map { |x| x.to_i(16) }
      [lo, hi]
    end
  end

  def readable?(addr, n)
    addr.is_a?(Integer) && addr > 0 &&
      @ranges.any? { |lo, hi| addr >= lo && addr + n <= hi }
  end

  def bytes(addr, n)
    return nil unless readable?(addr, n)
    Fiddle::Pointer.new(addr)[0, n]
  end

  def u64(addr)
    b = bytes(addr, 8)
    b && b.unpack1('Q<')
  end

  def u32(addr)
    b = bytes(addr, 4)
    b && b.unpack1('L<')
  end

  def i32(addr)
    b = bytes(addr, 4)
    b && b.unpack1('l<')
  end
end

$checks = 0
$failed = []
def check(what, ok)
  $checks += 1
  $failed << what unless ok
  ok
end

M = Mem.new
o = OFF

def rstring(v)
  return nil unless v && (v & 7).zero? && v != 0
  flags = M.u64(v)
  return nil unless flags && (flags & OFF['t_mask']) == OFF['t_string']
  if (flags & OFF['rstring_noembed']).zero?
    len = (flags & OFF['rstring_embed_len_mask']) >> OFF['rstring_embed_len_shift']
    M.bytes(v + OFF['rstring_embed_ary'], len)
  else
    len = M.u64(v + OFF['rstring_len'])
    ptr = M.u64(v + OFF['rstring_ptr'])
    return nil unless len && ptr && len < 4096
    M.bytes(ptr, len)
  end
end

def rarray_at(v, i)
  flags = M.u64(v)
  return nil unless flags && (flags & OFF['t_mask']) == OFF['t_array']
  if (flags & OFF['rarray_embed_flag']).zero?
    len = M.u64(v + OFF['rarray_len'])
    ptr = M.u64(v + OFF['rarray_ptr'])
    ptr && len && i < len ? M.u64(ptr + 8 * i) : nil
  else
    len = (flags & OFF['rarray_embed_len_mask']) >> OFF['rarray_embed_len_shift']
    i < len ? M.u64(v + OFF['rarray_embed_ary'] + 8 * i) : nil
  end
end

def rarray_len(v)
  flags = M.u64(v)
  return nil unless flags && (flags & OFF['t_mask']) == OFF['t_array']
  return M.u64(v + OFF['rarray_len']) if (flags & OFF['rarray_embed_flag']).zero?
  (flags & OFF['rarray_embed_len_mask']) >> OFF['rarray_embed_len_shift']
end

def rarray_first(v)
  rarray_at(v, 0)
end

def imemo_type(v)
  flags = M.u64(v)
  return nil unless flags && (flags & OFF['t_mask']) == OFF['t_imemo']
  (flags >> OFF['imemo_shift']) & OFF['imemo_mask']
end

# the iseq's label, path and first line
def iseq_info(iseq)
  return nil unless imemo_type(iseq) == OFF['imemo_iseq']
  body = M.u64(iseq + OFF['iseq_body'])
  return nil unless body
  label = rstring(M.u64(body + OFF['body_location_label']))
  pathobj = M.u64(body + OFF['body_location_pathobj'])
  path = rstring(pathobj)
  path ||= (first = rarray_first(pathobj)) && rstring(first)
  lineno = M.u64(body + OFF['body_location_first_lineno'])
  path_len = rstring(pathobj) ? 1 : rarray_len(pathobj)
  { label: label, path: path, first_lineno: lineno && (lineno >> 1),
    encoded: M.u64(body + OFF['body_iseq_encoded']),
    size: M.u32(body + OFF['body_iseq_size']), path_len: path_len }
end

def method_entry(v)
  t = imemo_type(v)
  v = M.u64(v + OFF['svar_cref_or_me']) if t == OFF['imemo_svar']
  v && imemo_type(v) == OFF['imemo_ment'] ? v : nil
end

# --- the walk ----------------------------------------------------------
class Probe
  def spin_threads
    q = Queue.new
    @threads = 2.times.map { Thread.new { q.pop } }
    sleep 0.05 until @threads.all? { |t| t.status == 'sleep' }
    @q = q
  end

  def stop_threads
    @threads.size.times { @q << 1 }
    @threads.each(&:join)
  end

  # A second Ractor, waiting; its thread's native id in $ractor_tid.
  def start_ractor
    @ractor = Ractor.new do
      Ractor.yield Thread.current.native_thread_id
      Ractor.receive
    end
    $ractor_tid = @ractor.take
  end

  def stop_ractor
    @ractor.send(1)
    @ractor.take
  end

  def leaf_method
    'abc' =~ /b/ # $~ makes this frame's ep hold an svar, not the method entry
    locs = caller_locations(0)
    walk(locs)
  end
end
require File.join(__dir__, 'layout_probe_lib.rb')

# the method name of C method entry @me, through ruby_global_symbols
def cfunc_name(me)
  fn = Fiddle.dlopen(nil)['rb_sym_immortal_count']
  code = M.bytes(fn, 7)
  return nil unless code && code.bytes[0, 2] == [0x8b, 0x05] && code.bytes[6] == 0xc3
  symbols = fn + 6 + code[2, 4].unpack1('l<') - OFF['symbols_last_id']
  defn = M.u64(me + OFF['cme_def'])
  id = defn && M.u64(defn + OFF['def_original_id'])
  return nil unless id
  serial = id > OFF['last_op_id'] ? id >> OFF['id_scope_shift'] : id
  return nil if serial > M.u32(symbols + OFF['symbols_last_id']).to_i
  ids = M.u64(symbols + OFF['symbols_ids'])
  last = M.u32(symbols + OFF['symbols_last_id'])
  check('the ID table has a chunk per ID_ENTRY_UNIT serials',
        ids && last && rarray_len(ids) == last / OFF['id_entry_unit'] + 1)
  chunk = ids && rarray_at(ids, serial / OFF['id_entry_unit'])
  str = chunk && rarray_at(chunk, (serial % OFF['id_entry_unit']) * OFF['id_entry_size'])
  str && rstring(str)
end

# The tids of rb_ractor_t @ractor's threads (its threads.set list).
def ractor_tids(ractor)
  head = ractor && ractor + OFF['ractor_threads']
  tids = []
  node = head && M.u64(head)
  64.times do
    break if node.nil? || node == head
    th = node - OFF['thread_lt_node']
    tids << M.i32(th + OFF['thread_tid'])
    node = M.u64(node)
  end
  tids
end

def walk(locs)
  o = OFF
  M.refresh
  handle = Fiddle.dlopen(nil)
  vm_ptr_addr = handle['ruby_current_vm_ptr']
  vm = M.u64(vm_ptr_addr)
  check('ruby_current_vm_ptr is set', vm && vm != 0) or return
  ractor = M.u64(vm + o['vm_main_ractor'])
  main_th = M.u64(vm + o['vm_main_thread'])
  check('vm.ractor.main_thread is a thread of this vm',
        main_th && M.u64(main_th + o['thread_vm']) == vm) or return
  check('main thread tid is Thread.main.native_thread_id',
        M.i32(main_th + o['thread_tid']) == Thread.main.native_thread_id)

  # the main ractor's thread list
  tids = ractor_tids(ractor)
  check('main ractor threads are Thread.list (tids)',
        tids.sort == Thread.list.map(&:native_thread_id).sort)
  check('threads.cnt', ractor && M.u32(ractor + o['ractor_threads_cnt']) == Thread.list.size)

  # every ractor: vm.ractor.set, the main one first, then start_ractor's
  rhead = vm + o['vm_ractor_set']
  ractors = []
  rnode = M.u64(rhead)
  16.times do
    break if rnode.nil? || rnode == rhead
    ractors << rnode - o['ractor_vmlr_node']
    rnode = M.u64(rnode)
  end
  check('vm.ractor.set ends at its head', rnode == rhead)
  check('vm.ractor.set starts with the main ractor',
        ractors.first == ractor && M.u64(ractor + o['ractor_vmlr_node'] + 8) == rhead)
  check("vm.ractor.cnt is the set's size (2)",
        ractors.size == 2 && M.u32(vm + o['vm_ractor_cnt']) == ractors.size)
  check("the second ractor's thread is its Ractor's (tid)",
        ractors[1] && ractor_tids(ractors[1]) == [$ractor_tid])

  ec = M.u64(main_th + o['thread_ec'])
  check('ec.thread_ptr is the thread', ec && M.u64(ec + o['ec_thread_ptr']) == main_th) or return
  stack = M.u64(ec + o['ec_vm_stack'])
  size = M.u64(ec + o['ec_vm_stack_size'])
  cfp = M.u64(ec + o['ec_cfp'])
  check('ec.cfp inside its VM stack',
        stack && size && cfp && cfp >= stack && cfp < stack + size * 8) or return
  stack_end = stack + size * 8

  frames = []
  # as Ruby's own backtrace (vm_backtrace.c): the outermost control frame
  # (the dummy top frame) is not shown, nor an iseq frame without a pc
  while cfp + 2 * o['cfp_size'] <= stack_end && frames.size < 200
    iseq = M.u64(cfp + o['cfp_iseq'])
    ep = M.u64(cfp + o['cfp_ep'])
    pc = M.u64(cfp + o['cfp_pc'])
    flags = ep && M.u64(ep + o['ep_flags'] * 8)
    break unless check('control frame readable', iseq && ep && flags)
    magic = flags & o['frame_magic_mask']
    me_cref = M.u64(ep + o['ep_me_cref'] * 8)
    if magic == o['frame_magic_cfunc']
      me = method_entry(me_cref)
      defn = me && M.u64(me + o['cme_def'])
      type = defn && (M.u32(defn + o['def_type']) & 0xf)
      check('C frame has a C method entry', type == o['method_type_cfunc'])
      frames << [:c, me && cfunc_name(me)]
    elsif iseq != 0 && pc != 0
      info = iseq_info(iseq)
      check('iseq frame names an iseq', info) or break
      check('pc inside the iseq', pc && info[:encoded] && pc >= info[:encoded] &&
            pc <= info[:encoded] + info[:size] * 8)
      if magic == o['frame_magic_method']
        me = method_entry(me_cref)
        defn = me && M.u64(me + o['cme_def'])
        check('method frame entry leads to its iseq',
              defn && M.u64(defn + o['def_iseq_ptr']) == iseq)
        info[:method] = true
      end
      frames << [:rb, info]
    end
    cfp += o['cfp_size']
  end

  # caller_locations(0) is leaf first, like the walk, from leaf_method
  # on; the walk also holds the frames of walk() and its readers above it
  start = frames.index { |k, info| k == :rb && info[:label] == 'leaf_method' }
  check('leaf_method found by the walk', start) or return
  frames = frames[start..]
  $stderr.puts frames.map { |k, i| k == :c ? "C" : i[:label] }.inspect, locs.map(&:label).inspect if ENV["PROBE_DEBUG"]
  check("as many frames as caller_locations (#{frames.size} / #{locs.size})",
        frames.size == locs.size)
  frames.zip(locs).each_with_index do |(f, l), i|
    next unless l
    kind, info = f
    if kind == :c
      check("frame #{i} (#{l.label}) is a C frame named #{info.inspect}", info == l.label)
    else
      check("frame #{i} label #{info[:label].inspect} == #{l.label.inspect}", info[:label] == l.label)
      check("frame #{i} path #{info[:path].inspect} == #{l.path.inspect}", info[:path] == l.path)
    end
  end
  m = frames.find { |k, info| k == :rb && info[:label] == 'leaf_method' }
  check('leaf_method first line is its source_location',
        m && m[1][:first_lineno] == Probe.instance_method(:leaf_method).source_location[1])
  code = RubyVM::InstructionSequence.of(Probe.instance_method(:leaf_method)).to_a.last
  check('leaf_method iseq_size', m && m[1][:size] == code.grep(Array).sum(&:size))
  check('path of the main script is [path, realpath]',
        frames.last[1][:path] == File.basename(__FILE__) && frames.last[1][:path_len] == 2)
  check('path of a file required by its absolute path', frames.any? { |k, info| k == :rb && info[:path] == File.join(__dir__, 'layout_probe_lib.rb') })
  check('a method frame was seen', frames.any? { |k, info| k == :rb && info[:method] })
  check('a block frame was seen', frames.any? { |k, info| k == :rb && info[:label] == 'block in middle_frame' })
  true
end

p = Probe.new
p.spin_threads
p.start_ractor
begin
  p.middle_frame
rescue StandardError => e
  check("probe raised #{e.class}: #{e.message}", false)
end
p.stop_threads
p.stop_ractor
check('ruby_version', RUBY_VERSION.split('.').first(2).map(&:to_i) == [OFF['major'], OFF['minor']])
puts JSON.generate(ok: $failed.empty?, checks: $checks, failed: $failed)
