# reuse.rb SECS - two "templates" compiled anew on every request (as ERB
# or instance_eval code is), with GC in between, so each request's iseqs
# take memory the last request's freed: an iseq address is reused by
# another iseq all the time. For tests/test_ruby.py: a frame must never be
# named after the iseq that used its address before (or after) it.
def render_alpha = eval("x = 0; i = 0; while i < 20000; x += i; i += 1; end; x", nil, "alpha_tpl.erb", 10)
def render_beta  = eval("y = 0; j = 0; while j < 20000; y += j; j += 1; end; y", nil, "beta_tpl.erb", 20)

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0] || 4)
n = 0
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  render_alpha
  GC.start if n % 3 == 0
  render_beta
  GC.start if n % 5 == 0
  n += 1
end
