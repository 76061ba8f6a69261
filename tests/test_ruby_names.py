"""Naming CRuby frames from a live process (src/ruby/iseq.h), without BPF.

- tests/unit/test_ruby_iseq.c: fake CRuby 3.1 objects in the test's own
  memory (iseqs with succinct line tables, method entries, svars, classes,
  the ID table) named back through process_vm_readv; hostile memory
  (garbage addresses, wrong types, absurd lengths, random corruption) is
  an error, never a crash; also built with ASan/UBSan when it can be.
- tests/unit/ruby_walk.c on a real `ruby` (Debian 12's 3.1.2) that prints
  its own caller_locations and stops itself: every Ruby frame's label,
  path and line equal Ruby's own, method frames are "Owner#method"
  ("Util.helper" for a module's singleton method), C frames are named
  (Array#each, Integer#times, Kernel#require_relative, Process.kill).
"""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = os.path.join(ROOT, "build", "tests", "unit")

MAIN_RB = '''# names_main.rb: known frames, a snapshot of its own backtrace, SIGSTOP.
OUT = ARGV[0]

def snap
  locs = caller_locations(0).map { |l| [l.label, l.path, l.lineno].join("\\t") }; File.write(OUT, locs.join("\\n") + "\\n"); Process.kill(:STOP, $$)
end

module Util
  def self.helper(n)
    yield n
  end
end

module Outer
  class Foo
    def bar
      [1].each { |x| Util.helper(x) { |y| a_rather_long_method_name_on_the_heap(y) } }
    end

    define_method(:dm) { |k| bar }

    def a_rather_long_method_name_on_the_heap(y)
      "abc" =~ /b/
      x = 0
%s
      1.times { snap }
    end
  end
end

require_relative "names_lib"
''' % "\n".join("      x += %d" % i for i in range(1, 31))

LIB_RB = "# names_lib.rb\nOuter::Foo.new.dm(1)\n"

# The function profd gives each method and C frame (Ruby's
# rb_profile_frame_full_label), by the label caller_locations shows.
METHODS = {
    "snap": "Object#snap",
    "a_rather_long_method_name_on_the_heap":
        "Outer::Foo#a_rather_long_method_name_on_the_heap",
    "helper": "Util.helper",
    "bar": "Outer::Foo#bar",
}
CFUNCS = {
    "times": "Integer#times",
    "each": "Array#each",
    "require_relative": "Kernel#require_relative",
}


def build(target):
    r = subprocess.run(["make", "-C", ROOT, os.path.join("build", "tests", "unit", target)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return os.path.join(UNIT, target)


def ruby_31():
    ruby = shutil.which("ruby")
    if not ruby:
        pytest.skip("ruby not installed (optional)")
    v = subprocess.run([ruby, "-e", "print RUBY_VERSION"], capture_output=True,
                       text=True).stdout
    if not v.startswith("3.1."):
        pytest.skip(f"ruby {v}: the layout table knows 3.1")
    return ruby


def test_unit_ruby_iseq():
    """Fake 3.1 objects named back; hostile memory is an error."""
    r = subprocess.run([build("test_ruby_iseq")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    assert "all passed" in r.stdout


def asan_build(tmp_path, src):
    """@src (tests/unit/...) with the Ruby naming sources under ASan/UBSan,
    the rest of the core library as built."""
    lib = os.path.join(ROOT, "build", "libprofd_core.a")
    build("test_ruby_iseq")  # the library is up to date
    out = str(tmp_path / (os.path.basename(src) + ".asan"))
    srcs = [os.path.join(ROOT, "src", "ruby", f) for f in
            ("iseq.c", "rvalue.c", "symbols.c", "offsets.c")]
    srcs.append(os.path.join(ROOT, "src", "runtime", "addr_cache.c"))
    cmd = ["cc", "-std=gnu11", "-g", "-O1", "-D_GNU_SOURCE",
           "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
           "-I" + os.path.join(ROOT, "build"), "-I" + os.path.join(ROOT, "src"), "-I" + ROOT,
           "-I" + os.path.join(ROOT, "tests", "unit"), "-o", out,
           os.path.join(ROOT, "tests", "unit", src)] + srcs + [
           lib, "-lbpf", "-ldebuginfod", "-ldw", "-lelf", "-lz", "-lprotobuf-c", "-lcurl", "-lyaml",
           "-lmicrohttpd", "-lstdc++", "-lpthread", "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("no ASan build here: " + r.stderr[-500:])
    return out


def test_unit_ruby_iseq_asan(tmp_path):
    """The same unit test with the naming code under ASan and UBSan: the
    random corruptions read out of bounds nowhere."""
    exe = asan_build(tmp_path, "test_ruby_iseq.c")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    r = subprocess.run([exe], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "all passed" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert "runtime error" not in r.stderr, r.stderr[-4000:]


def walk(tmp_path, walker):
    ruby = ruby_31()
    (tmp_path / "names_main.rb").write_text(MAIN_RB)
    (tmp_path / "names_lib.rb").write_text(LIB_RB)
    locs_file = tmp_path / "locs.txt"
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    r = subprocess.run([walker, ruby, str(tmp_path / "names_main.rb"), str(locs_file)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    locs = [line.split("\t") for line in locs_file.read_text().splitlines()]
    head = [line for line in r.stdout.splitlines() if line.startswith("# ")]
    frames = [line.split("\t") for line in r.stdout.splitlines()
              if line and not line.startswith("#")]
    outer = [line for line in r.stdout.splitlines() if line.startswith("#outer ")]
    return head, locs, frames, outer, r


def check_walk(head, locs, frames, outer, r):
    out = r.stdout
    assert head and head[0].split()[2] == "1", "ruby_global_symbols found: " + out
    for f in frames:
        assert f[1] == "0", "every frame named: " + out
    # the leaf: the C frame of Process.kill, called after caller_locations
    assert frames[0][0] == "cfunc" and frames[0][2] == "Process.kill", out
    got = frames[1:]
    assert len(got) == len(locs), "one frame per caller_locations entry:\n%s\n%s" % (out, locs)
    kinds = set()
    for (kind, _, function, path, line), (label, lpath, lline) in zip(got, locs):
        kinds.add(kind)
        if kind == "cfunc":
            assert function == CFUNCS[label], (function, label, out)
            continue
        want = METHODS[label] if kind == "method" else label
        assert (function, path, int(line)) == (want, lpath, int(lline)), out
    assert kinds == {"cfunc", "method", "iseq"}, out
    labels = [loc[0] for loc in locs]
    for needed in ("<main>", "<top (required)>", "block in <class:Foo>",
                   "block (2 levels) in bar", "helper", "each", "times"):
        assert needed in labels, labels
    # the toplevel frame Ruby's backtraces leave out (the walker should too)
    assert len(outer) == 1 and "<main>" in outer[0], out


def test_names_match_caller_locations(tmp_path):
    """A stopped ruby's main thread, walked and named from user space,
    equals its own caller_locations (label, path, line), methods as
    Owner#method, C frames named."""
    check_walk(*walk(tmp_path, build("ruby_walk")))


def test_names_match_caller_locations_asan(tmp_path):
    """The same walk with the naming code under ASan and UBSan."""
    ruby_31()
    exe = asan_build(tmp_path, "ruby_walk.c")
    check_walk(*walk(tmp_path, exe))
