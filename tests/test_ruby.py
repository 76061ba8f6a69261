"""CRuby stacks (issue 17): the real profd over Debian's ruby 3.1, read back
with Google's pprof (-raw: every frame with its mapping). The oracle is
Ruby itself: each workload (tests/workloads/ruby/, see hot.rb) reports at
its hot spot the stack caller_locations(0) gives (label, path, line per
frame) and spins there for a known time. For each hot spot, >= 90 % of
its thread's samples must carry exactly those Ruby frames, root to leaf,
under the pprof mapping "[ruby]", with the files and lines (labels
compared by Ruby 3.1's rules: caller_locations says "bar" where profd says
"Foo#bar"; the owner is checked where the script knows it), where
libruby's rb_vm_exec frame was (native frames below: ruby_run_node,
thread start).

Tests that need the Ruby unwinder skip while `profd --help` lists no
"ruby" among --tracers names (the runtime is not merged yet;
PROFD_RUBY_FORCE=1 runs them regardless); the oracle tests and the
native-only ones run now. Needs root, like profd."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from pprof_traces import comments, pprof_raw_samples

RBDIR = os.path.join(ROOT, "tests", "workloads", "ruby")
FREQ = "99"
RUBY = "/usr/bin/ruby3.1"
MAPPING = "[ruby]"


# --- the runtime, the interpreter ---------------------------------------------

def help_text(profd_bin):
    return subprocess.run([profd_bin, "--help"], capture_output=True, text=True).stdout


def tracer_names(profd_bin):
    m = re.search(r"Which unwinders run, of\s+([a-z0-9_,]+)", help_text(profd_bin))
    return m.group(1).split(",") if m else []


@pytest.fixture
def ruby():
    if not os.access(RUBY, os.X_OK):
        pytest.skip(f"{RUBY} not installed (Debian's ruby3.1)")
    return RUBY


@pytest.fixture
def ruby_unwinder(profd_bin, ruby):
    """Skip unless this profd has the Ruby runtime (its --tracers name);
    PROFD_RUBY_FORCE=1 runs the tests anyway (to see how they fail)."""
    if "ruby" not in tracer_names(profd_bin) and not os.environ.get("PROFD_RUBY_FORCE"):
        pytest.skip("profd has no Ruby unwinder yet (`--help` lists no ruby "
                    "among --tracers names): runs once ruby-core is merged")
    return ruby


# --- running a workload ---------------------------------------------------------

def run_profd(profd_bin, pprof, tmp_path, argv, env=None, freq=FREQ, profd_args=(),
               timeout=120):
    """`profd exec --no-gpu -o DIR --sampling-frequency FREQ ... -- ARGV`.
    Returns (samples of every profile as pprof_raw_samples() gives them,
    profile comments)."""
    out = tmp_path / "out"
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "-o", str(out),
                        "--sampling-frequency", freq, *profd_args, "--", *argv],
                       env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    samples, raw = [], ""
    for p in sorted(out.glob("cpu-*.pb.gz")):
        samples += pprof_raw_samples(pprof, str(p))
        raw += comments(pprof, str(p))
    return samples, raw


def run_workload(profd_bin, pprof, tmp_path, script, *args, secs=4, profd_args=(),
                 timeout=120):
    """`profd exec --no-gpu -o DIR ... -- ruby SCRIPT ARGS` with the hot spots
    spinning @secs. Returns (reports by name: a list each, samples of every
    profile as pprof_raw_samples() gives them, profile comments)."""
    reports = tmp_path / "reports.jsonl"
    env = dict(os.environ, PROFD_RUBY_OUT=str(reports), PROFD_RUBY_SECS=str(secs))
    samples, raw = run_profd(profd_bin, pprof, tmp_path,
                             [RUBY, "--disable-gems", os.path.join(RBDIR, script), *args],
                             env=env, profd_args=profd_args, timeout=timeout)
    by_name = {}
    if reports.exists():
        for line in reports.read_text().splitlines():
            rec = json.loads(line)
            by_name.setdefault(rec["name"], []).append(rec)
    return by_name, samples, raw


def of_thread(samples, rec):
    return [s for s in samples if s["labels"].get("pid") == str(rec["pid"]) and
            s["labels"].get("tid") == str(rec["tid"])]


def of_process(samples, pid):
    return [s for s in samples if s["labels"].get("pid") == str(pid)]


def ruby_frames(sample):
    """The sample's Ruby frames (mapping [ruby]), root first."""
    return [f for f in reversed(sample["frames"]) if f["mapping"] == MAPPING]


def names(sample):
    return [f["function"] or "?" for f in sample["frames"]]


# --- comparing with Ruby's own view ---------------------------------------------

def is_method_label(label):
    """Ruby 3.1 labels a method's frame by the method name alone; blocks,
    class bodies and tops have their own ("block in x", "<main>", ...)."""
    return not label.startswith(("block ", "block in ", "<", "rescue in ",
                                 "ensure in "))


def function_matches(fn, want):
    """profd's function name @fn for oracle frame @want."""
    if fn is None:
        return False
    if want["owner"]:
        return fn == want["owner"]
    label = want["label"]
    if is_method_label(label):
        return fn == label or fn.endswith("#" + label) or fn.endswith("." + label)
    return fn == label


def frame_matches(got, want):
    if not function_matches(got["function"], want):
        return False
    if want["cfunc"]:	# C frames: Ruby gives its caller's place, profd none
        return True
    return got["file"] == want["path"] and got["line"] == want["line"]


def exact(sample, rec):
    """The sample's Ruby frames are exactly the reported ones, in order."""
    got = ruby_frames(sample)
    want = list(reversed(rec["frames"]))
    return len(got) == len(want) and all(frame_matches(g, w) for g, w in zip(got, want))


def untrue(sample, rec):
    """A Ruby frame of the sample that contradicts the report: frames are
    compared from the leaf; error frames ("[ruby...") may stand for any.
    None when every frame is true (the walk may have stopped early)."""
    got = list(reversed(ruby_frames(sample)))
    want = rec["frames"]
    if len(got) > len(want):
        return got[len(want)]
    for g, w in zip(got, want):
        if not (g["function"] or "").startswith("[ruby") and not frame_matches(g, w):
            return g
    return None


def describe(sample):
    return [(f["function"], os.path.basename(f["file"]), f["line"])
            for f in ruby_frames(sample)] or names(sample)[:8]


def worst(samples, ok, n=3):
    bad = sorted((s for s in samples if not ok(s)), key=lambda s: -s["value"])
    return [(s["value"], describe(s)) for s in bad[:n]]


def assert_hot(samples, rec, extra=lambda s: True, share=0.9, least=20):
    """>= @share of @rec's thread's samples have exactly its Ruby frames
    (and pass @extra)."""
    mine = of_thread(samples, rec)
    total = sum(s["value"] for s in mine)

    def ok(s):
        return exact(s, rec) and extra(s)
    good = sum(s["value"] for s in mine if ok(s))
    assert total >= least, f"{rec['name']}: only {total} samples"
    assert good >= share * total, (
        f"{rec['name']}: {good}/{total} samples with exactly "
        f"{[(f['owner'] or f['label'], f['line']) for f in reversed(rec['frames'])]}; "
        f"worst: {worst(mine, ok)}")


def below_ruby(sample, *natives):
    """Each of @natives is a frame rootward of every Ruby frame, and no
    rb_vm_exec is left (its place is the Ruby frames')."""
    ns = names(sample)
    rb = [i for i, f in enumerate(sample["frames"]) if f["mapping"] == MAPPING]
    if not rb or "rb_vm_exec" in ns:
        return False
    return all(n in ns and ns.index(n) > max(rb) for n in natives)


def one(reports, name):
    assert name in reports, f"no report {name!r}: {sorted(reports)}"
    return reports[name][0]


# --- the oracle, now -------------------------------------------------------------

def run_oracle(tmp_path, script, *args, secs=0.3):
    reports = tmp_path / "oracle.jsonl"
    env = dict(os.environ, PROFD_RUBY_OUT=str(reports), PROFD_RUBY_SECS=str(secs))
    r = subprocess.run([RUBY, "--disable-gems", os.path.join(RBDIR, script), *args],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = {}
    for line in reports.read_text().splitlines():
        rec = json.loads(line)
        out.setdefault(rec["name"], []).append(rec)
    return out


def chain(rec):
    """root -> leaf: the owner where the script names it, else the label."""
    return [f["owner"] or f["label"] for f in reversed(rec["frames"])]


def test_oracle_reports_the_documented_chains(ruby, tmp_path):
    """The workloads report what their top comments promise (so a failure
    below is profd's, not the oracle's), with spin lines that are real."""
    got = run_oracle(tmp_path, "stacks.rb")
    got.update(run_oracle(tmp_path, "callbacks.rb"))
    want = {
        "chain": ["block in <main>", "Chain#outer", "Chain#inner", "Mixin#mixed",
                  "Chain.sing"],
        "dynamic": ["block in <main>", "block in <class:Dyn>", "Dyn#method_missing"],
        "required": ["block in <main>", "Object#run_required",
                     "Kernel#require_relative", "<top (required)>"],
        "class_body": ["block in <main>", "<class:Body>"],
        "closure": ["block in <main>", "Closure#outer", "block in outer", "Closure#inner"],
        "sort_by": ["block in <main>", "Sorter#run", "Enumerable#sort_by", "Array#each",
                    "block in run"],
        "times": ["block in <main>", "Looper#run", "Integer#times", "block in run",
                  "Array#each", "block (2 levels) in run"],
        "fiber": ["block in fiber_main", "Object#fib_a", "Object#fib_b"],
    }
    for name, frames in want.items():
        rec = one(got, name)
        assert chain(rec) == frames, (name, chain(rec))
        leaf = rec["frames"][0]
        with open(leaf["path"]) as f:
            assert "i += 1" in f.read().splitlines()[leaf["line"] - 1], leaf
    tids = {one(got, n)["tid"] for n in ("chain", "dynamic", "required", "class_body",
                                         "closure")}
    assert len(tids) == 5, "each stacks.rb hot spot has a thread of its own"
    rac = run_oracle(tmp_path, "ractors.rb")
    assert chain(one(rac, "main")) == ["<main>", "Object#main_outer", "Object#main_inner"]
    assert chain(one(rac, "ractor_a")) == ["block in <main>", "Alpha#run", "Alpha#step"]
    assert chain(one(rac, "ractor_b")) == ["block in <main>", "Beta.run", "Beta.middle",
                                           "Beta.leaf"]
    assert len({one(rac, n)["tid"] for n in ("main", "ractor_a", "ractor_b")}) == 3
    for name in ("ractor_a", "ractor_b"):
        leaf = one(rac, name)["frames"][0]
        with open(leaf["path"]) as f:
            assert "i += 1" in f.read().splitlines()[leaf["line"] - 1], leaf
    fork = run_oracle(tmp_path, "lifecycle.rb", "fork")
    assert chain(one(fork, "parent")) == ["<main>", "Object#parent_work"]
    assert chain(one(fork, "child")) == ["<main>", "Kernel#fork", "block in <main>",
                                         "Object#child_work"]
    assert one(fork, "child")["pid"] != one(fork, "parent")["pid"]
    ex = run_oracle(tmp_path, "lifecycle.rb", "exec")
    assert chain(one(ex, "after_exec")) == ["<main>", "Object#after_exec"]


def test_oracle_matching_rules():
    """Ruby 3.1 labels against profd's names."""
    meth = {"label": "bar", "owner": None, "cfunc": False, "path": "/x.rb", "line": 3}
    assert function_matches("Foo#bar", meth) and function_matches("Foo.bar", meth)
    assert function_matches("bar", meth) and not function_matches("Foo#bart", meth)
    assert not function_matches("block in bar", meth)
    owned = dict(meth, owner="Foo#bar")
    assert function_matches("Foo#bar", owned) and not function_matches("bar", owned)
    blk = dict(meth, label="block in bar")
    assert function_matches("block in bar", blk) and not function_matches("Foo#bar", blk)
    c = dict(meth, label="each", cfunc=True, owner="Array#each")
    assert frame_matches({"function": "Array#each", "file": "", "line": 0}, c)
    assert not frame_matches({"function": "bar", "file": "/x.rb", "line": 4}, meth)


# --- native only: no Ruby frames ----------------------------------------------------

@pytest.mark.parametrize("flags", [["--tracers", "native"], ["--tracers", "native,python"]],
                         ids=["native", "native-python"])
def test_native_only_has_no_ruby_frames(profd_bin, pprof, ruby, tmp_path, flags):
    """--tracers without ruby: no frame under [ruby], and the native
    stacks keep rb_vm_exec."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "callbacks.rb",
                                       secs=2, profd_args=flags)
    pid = str(one(reports, "fiber")["pid"])
    mine = [s for s in samples if s["labels"].get("pid") == pid]
    assert sum(s["value"] for s in mine) >= 50
    assert not [s for s in mine if ruby_frames(s)], [describe(s) for s in mine[:3]]
    vm = sum(s["value"] for s in mine if "rb_vm_exec" in names(s))
    assert vm >= 0.5 * sum(s["value"] for s in mine)


# --- exact stacks -----------------------------------------------------------------------

def test_methods_modules_singletons_dynamic(profd_bin, pprof, ruby_unwinder, tmp_path):
    """stacks.rb: instance, module and singleton methods; define_method and
    method_missing; a required file's top; a class body. One thread each;
    thread start stays below the Ruby frames."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "stacks.rb", secs=6)
    for name in ("chain", "dynamic", "required", "class_body", "closure"):
        assert_hot(samples, one(reports, name),
                   extra=lambda s: below_ruby(s, "start_thread"))


def test_threads_of_every_ractor(profd_bin, pprof, ruby_unwinder, tmp_path):
    """ractors.rb: the main thread and two Ractors' threads, each spinning
    in its own chain: each thread's samples carry exactly its own Ruby
    frames (the Ractors' threads are found on the VM's ractor list, not
    the main ractor's thread list), thread start below a Ractor's."""
    reports, samples, raw = run_workload(profd_bin, pprof, tmp_path, "ractors.rb", secs=5)
    assert_hot(samples, one(reports, "main"),
               extra=lambda s: below_ruby(s, "ruby_run_node"))
    for name in ("ractor_a", "ractor_b"):
        assert_hot(samples, one(reports, name),
                   extra=lambda s: below_ruby(s, "start_thread"))


def test_ruby_calls_c_calls_ruby(profd_bin, pprof, ruby_unwinder, tmp_path):
    """callbacks.rb: sort_by and times/each yield from C into Ruby blocks:
    C frames named Owner#method in order, libruby's native frames between
    the C method and the block it calls; a Fiber shows its own frames."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "callbacks.rb", secs=5)

    def native_between(s, c_name, block):
        fr = s["frames"]
        ci = next((i for i, f in enumerate(fr) if f["function"] == c_name), None)
        bi = next((i for i, f in enumerate(fr) if f["function"] == block), None)
        return ci is not None and bi is not None and bi < ci and \
            any(f["mapping"] != MAPPING for f in fr[bi + 1:ci])
    assert_hot(samples, one(reports, "sort_by"),
               extra=lambda s: native_between(s, "Array#each", "block in run") and
               below_ruby(s, "start_thread"))
    assert_hot(samples, one(reports, "times"),
               extra=lambda s: native_between(s, "Integer#times", "block in run") and
               native_between(s, "Array#each", "block (2 levels) in run"))
    assert_hot(samples, one(reports, "fiber"))


def test_ruby_frames_replace_rb_vm_exec(profd_bin, pprof, ruby_unwinder, tmp_path):
    """The main thread: <main> and the methods sit where rb_vm_exec was,
    above ruby_run_node and libc's start (native frames kept)."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "lifecycle.rb", "fork",
                                       secs=4)
    assert_hot(samples, one(reports, "parent"),
               extra=lambda s: below_ruby(s, "ruby_run_node", "__libc_start_main"))


def test_forked_child(profd_bin, pprof, ruby_unwinder, tmp_path):
    """A forked child spins in its own chain (through Kernel#fork's block),
    the parent in its own: each process's samples show its own."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "lifecycle.rb", "fork",
                                       secs=4)
    parent, child = one(reports, "parent"), one(reports, "child")
    assert parent["pid"] != child["pid"]
    assert_hot(samples, parent)
    assert_hot(samples, child)


def test_grandchild_of_a_fork(profd_bin, pprof, ruby_unwinder, tmp_path):
    """A child that forks and exits at once (Process.daemon's double
    fork): the grandchild's main thread keeps a tid of a process gone by
    then, and is still walked."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "lifecycle.rb",
                                       "forkfork", secs=3)
    assert_hot(samples, one(reports, "grandchild"))


def test_exec_into_another_script(profd_bin, pprof, ruby_unwinder, tmp_path):
    """A Ruby process that execs another Ruby script: the same pid, now
    walked as the new image (found again after the exec)."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path, "lifecycle.rb", "exec",
                                       secs=4)
    assert_hot(samples, one(reports, "after_exec"),
               extra=lambda s: below_ruby(s, "ruby_run_node"))


def test_processes_exiting_mid_sample(profd_bin, pprof, ruby_unwinder, tmp_path):
    """12 children each end (Process.exit! from another thread) while their
    main thread spins: profd carries on; no frame it names is untrue, and
    most of their samples with Ruby frames are exact."""
    reports, samples, raw = run_workload(profd_bin, pprof, tmp_path, "lifecycle.rb", "exit")
    kids = reports.get("short_child", [])
    assert len(kids) >= 10, sorted(reports)
    by_pid = {str(k["pid"]): k for k in kids}
    # the main thread of each (its exit thread runs a block of its own)
    walked = [s for s in samples if s["labels"].get("pid") in by_pid and ruby_frames(s)
              and s["labels"].get("tid") == str(by_pid[s["labels"]["pid"]]["tid"])]
    total = sum(s["value"] for s in walked)
    wrong = [(s["value"], describe(s)) for s in walked
             if untrue(s, by_pid[s["labels"]["pid"]])]
    assert not wrong, wrong[:3]
    good = sum(s["value"] for s in walked if exact(s, by_pid[s["labels"]["pid"]]))
    assert total >= 50 and good >= 0.7 * total, (good, total)


def test_deep_stack(profd_bin, pprof, ruby_unwinder, tmp_path):
    """50 nested Ruby methods (bench/workloads_ruby/deep.rb, as the cost
    bench walks them): every frame, in order."""
    reports, samples, _ = run_workload(profd_bin, pprof, tmp_path,
                                       os.path.join(ROOT, "bench", "workloads_ruby",
                                                    "deep.rb"), secs=3)
    rec = one(reports, "deep")
    assert len(rec["frames"]) == 50, len(rec["frames"])
    assert_hot(samples, rec)


@pytest.mark.parametrize("force_gc", ["1", "0"])
def test_reused_iseq_addresses_never_misnamed(profd_bin, pprof, ruby_unwinder, tmp_path,
                                              force_gc):
    """reuse.rb evals two templates per request, so one template's iseq is
    freed and its memory taken by the other's: the frame each Kernel#eval
    runs is its own template (Ruby labels eval'd code by the method that
    evals it, at the file eval was given) or an error frame ([ruby: ...],
    counted), never the other template. With GC.start between renders (a
    GC every few ms, sooner than profd names a sample) most are unknown;
    with Ruby's own GCs most are named (a read after a sample taken outside
    GC marking, in its GC epoch, sees the sample's object)."""
    samples, _ = run_profd(profd_bin, pprof, tmp_path,
                           [RUBY, "--disable-gems", os.path.join(RBDIR, "reuse.rb"), "4",
                            force_gc], freq="199")
    seen, named, wrong = 0, 0, []
    for s in samples:
        rf = ruby_frames(s)
        fns = [f["function"] or "" for f in rf]
        for i, fn in enumerate(fns):
            if fn != "Kernel#eval" or i == 0 or i + 1 >= len(fns):
                continue
            who = fns[i - 1].split("#")[-1]	# Object#render_alpha
            if who not in ("render_alpha", "render_beta"):
                continue
            seen += s["value"]
            inner = rf[i + 1]
            want = (who, "alpha_tpl.erb" if who == "render_alpha" else "beta_tpl.erb",
                    10 if who == "render_alpha" else 20)
            got = (inner["function"] or "", os.path.basename(inner["file"] or ""),
                   inner["line"])
            if got == want:
                named += s["value"]
            elif not got[0].startswith("[ruby"):
                wrong.append((s["value"], got, want))
    assert seen >= 100, seen
    assert not wrong, wrong[:5]
    if force_gc == "0":
        assert named >= 0.8 * seen, (named, seen)


def test_names_survive_pprofs_default_demangling(profd_bin, pprof, ruby_unwinder, tmp_path):
    """Google's pprof demangles a function's system name as C++ unless
    told not to; Ruby's names are not C++ ("<class:Body>", "<top
    (required)>" lost their <...> and (...) to it): they reach `pprof -top`
    as written."""
    _, _, _ = run_workload(profd_bin, pprof, tmp_path, "stacks.rb", secs=2)
    top = subprocess.run([pprof, "-top", "-nodecount", "200",
                          *sorted(map(str, (tmp_path / "out").glob("cpu-*.pb.gz")))],
                         capture_output=True, text=True, timeout=60).stdout
    for want in ("<class:Body>", "<top (required)>", "Chain#outer"):
        assert want in top, (want, top[-3000:])


# --- hostile processes ----------------------------------------------------------------

def ruby_loss(raw):
    """The sum of the Ruby runtime's loss counters in profile comments
    (lost.ruby* and partial.ruby*: their names are the runtime's own)."""
    return sum(int(n) for n in re.findall(r"(?:^|\s)(?:lost|partial)\.ruby\w*=(\d+)", raw, re.M))


@pytest.mark.parametrize("mode", ["garbage", "self"])
def test_overwritten_vm_stack(profd_bin, pprof, ruby_unwinder, tmp_path, mode):
    """hostile.rb overwrites its callers' control frames through Fiddle
    (iseq and pc to random memory or to another iseq, ep to unmapped or
    cyclic): profd keeps running, never names the overwritten frame
    "outer", still names the intact leaf, and counts the loss."""
    r = subprocess.run([RUBY, "--disable-gems", "-rfiddle", "-e", "1"], capture_output=True)
    if r.returncode:
        pytest.skip("Ruby's fiddle extension is not installed")
    out = tmp_path / "out"
    env = dict(os.environ, PROFD_RUBY_SECS="4")
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "-o", str(out), "--sampling-frequency",
                        FREQ, "--", RUBY, "--disable-gems",
                        os.path.join(RBDIR, "hostile.rb"), mode],
                       env=env, capture_output=True, text=True, timeout=120)
    if "layout?" in r.stdout:
        pytest.skip("this ruby's thread/ec layout is not the one hostile.rb knows")
    assert r.returncode == 0 and "ready" in r.stdout, (r.returncode, r.stderr[-2000:])
    samples, raw = [], ""
    for p in sorted(out.glob("cpu-*.pb.gz")):
        samples += pprof_raw_samples(pprof, str(p))
        raw += comments(pprof, str(p))
    walked = [s for s in samples if ruby_frames(s)]
    for s in walked:
        fns = [f["function"] or "" for f in ruby_frames(s)]
        assert not any(f == "outer" or f.endswith("#outer") for f in fns), describe(s)
    victim = sum(s["value"] for s in walked
                 if (ruby_frames(s)[-1]["function"] or "").endswith("victim"))
    assert victim >= 100, (victim, [describe(s) for s in walked[:3]])
    assert ruby_loss(raw) > 0, [ln for ln in raw.splitlines() if "ruby" in ln]


def test_fake_ruby_process(profd_bin, pprof, ruby_unwinder, tmp_path):
    """A program that only looks like Ruby (its symbols, a VM pointer to
    junk): profd neither crashes nor gives it Ruby frames."""
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    exe = tmp_path / "fake_ruby"
    subprocess.run([cc, "-O1", "-rdynamic", "-o", str(exe),
                    os.path.join(RBDIR, "fake_ruby.c")], check=True)
    samples, _ = run_profd(profd_bin, pprof, tmp_path, [str(exe), "3"], timeout=60)
    total = sum(s["value"] for s in samples)
    named = [describe(s) for s in samples
             if any(not (f["function"] or "").startswith("[ruby") for f in ruby_frames(s))]
    assert total >= 100 and not named, (total, named[:3])


def test_short_lived_code_is_named_from_its_first_sample(profd_bin, pprof, ruby_unwinder,
                                                         tmp_path):
    """60 methods, each loaded from its own file and run once for 40 ms
    (about 4 samples each at 99 Hz): profd reads each one's iseq only after
    its first sample, and a read after a sample taken while no GC marks
    names it (the GC frees objects only when its next cycle sweeps). Each
    spin's samples name its own method and file; none another's."""
    gen = tmp_path / "gen"
    gen.mkdir()
    samples, _ = run_profd(profd_bin, pprof, tmp_path,
                           [RUBY, "--disable-gems", os.path.join(RBDIR, "short_lived.rb"),
                            str(gen), "60", "40"])
    spins, named, wrong = 0, 0, []
    for s in samples:
        rf = ruby_frames(s)
        # the spin: <main> -> Integer#times -> block in <main> -> Kernel#send -> hot_I
        if len(rf) < 4 or rf[0]["function"] != "<main>" or \
                rf[2]["function"] != "block in <main>":
            continue
        leaf = rf[-1]
        fn = leaf["function"] or ""
        if fn.startswith("Process.") or fn.startswith("Kernel#load"):
            leaf = rf[-2]
            fn = leaf["function"] or ""
        m = re.fullmatch(r"Object#hot_(\d+)", fn)
        if not m and not fn.startswith("[ruby"):
            continue	# loading or writing a file, not a spin
        spins += s["value"]
        if m:
            want = f"gen_{m.group(1)}.rb"
            if os.path.basename(leaf["file"] or "") != want or not 2 <= leaf["line"] <= 6:
                wrong.append((s["value"], fn, leaf["file"], leaf["line"]))
            else:
                named += s["value"]
    assert spins >= 120, spins
    assert not wrong, wrong[:5]
    assert named >= 0.9 * spins, (named, spins)
