# reuse.rb SECS [FORCE_GC] - two "templates" compiled anew on every request
# (as ERB or instance_eval code is), so each request's iseqs take memory
# the last request's freed: an iseq address is reused by another iseq all
# the time. FORCE_GC 1 (the default): a GC.start between renders now and
# then (a GC every few milliseconds); 0: only the GCs Ruby runs itself.
# For tests/test_ruby.py: a frame must never be named after the iseq that
# used its address before (or after) it.
def render_alpha = eval("x = 0; i = 0; while i < 20000; x += i; i += 1; end; x", nil, "alpha_tpl.erb", 10)
def render_beta  = eval("y = 0; j = 0; while j < 20000; y += j; j += 1; end; y", nil, "beta_tpl.erb", 20)

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0] || 4)
force_gc = (ARGV[1] || "1") == "1"
n = 0
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  render_alpha
  GC.start if force_gc && n % 3 == 0
  render_beta
  GC.start if force_gc && n % 5 == 0
  n += 1
end
