"""V8 (node 20) JS frames in profd's own profiles: a real profd run (BPF
loaded: bpf/unwind_v8.bpf.h walks the frame-pointer chain at each sample,
src/v8/merge.c names the frames) read back with Google's pprof, against
node's own view of the same stack.

The program is tests/test_v8.py's: f1 -> f2 -> f3 -> Array.prototype.sort
-> a comparator -> a class method -> an arrow function -> a function of a
second file (require) -> the leaf, which writes its stack as node sees it
(Error.prepareStackTrace's CallSites) and then spins at a known line. Every
main-thread sample profd takes afterwards is in that spin.

- The JS frames of each sample (pprof -traces -lines: the frames with a
  JS file) must be node's own chain, innermost first, with Array's sort
  (a builtin: native name kept, its code is node's) left out; node's
  anonymous functions are "(anonymous)". Interpreted frames carry the line
  node gives (the leaf: its spin loop's line, from the bytecode offset);
  frames of compiled code have node's line or 0 (a line not read, counted).
- Interpreted only (--jitless); all compiled (Sparkplug for all,
  TurboFan for the chain, --no-turbo-inlining): exact chain; TurboFan
  with inlining on: what is shown must be a true subsequence of node's
  chain, the leaf and the outermost frames present.
- At least 90 % of the main thread's samples show that chain, once profd
  attached (the profiles after the first with a JS frame).
- test_inlined_frames_with_lines: functions TurboFan inlined
  (--trace-turbo-inlining says so) are frames of their own, every frame
  with node's line, a class constructor named as node names it.
- With `--tracers native` (V8 not walked) no sample has a JS frame: the
  assertions above fail without the V8 runtime.
- test_baseline_frames_have_lines: every function baseline (Sparkplug)
  code: the leaf's line in its body, each caller's node's own call site,
  the leaf's caller put back under Sparkplug's frameless builtins.
- Code churn (test_code_churn_never_misnamed): functions made by new
  Function, run hot and dropped, under GC pressure (and stress compaction:
  objects moved while profd reads them) beside long-lived hot functions:
  no JS frame misnamed, against node's own stacks; a churned frame is its
  own (its id in both names of a pair) or unnamed and counted.
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import start, stop, wait_file
from pprof_traces import comments, pprof_raw_samples, pprof_traces
from test_v8 import LIB_JS, MAIN_JS, spin_line

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

MODES = {
    "interp": ["--jitless"],
    "jit": ["--always-sparkplug", "--allow-natives-syntax", "--no-turbo-inlining"],
    "inlined": ["--allow-natives-syntax"],
}
# "name file[:line]" as pprof -traces -lines prints a frame with a file
JS_FRAME = re.compile(r"^(\S+) ((?:/|node:)\S*?)(?::(\d+))?$")


def run_node(tmp_path, mode):
    """Start the program; (process, node's own stack leaf first, as
    [name, file, line], builtins (no file) left out, '' named '(anonymous)')."""
    (tmp_path / "lib.js").write_text(LIB_JS)
    (tmp_path / "main.js").write_text(MAIN_JS)
    out = tmp_path / "stack.json"
    p = start([NODE, *MODES[mode], str(tmp_path / "main.js"), str(out),
               "interp" if mode == "interp" else "jit", "stack"],
              stderr=subprocess.DEVNULL)
    try:
        wait_file(str(out), timeout=60)
    except AssertionError:
        stop(p)
        raise
    time.sleep(1.0 if mode != "interp" else 0.3)  # the leaf's loop (OSR)
    stack = [[f[0] or "(anonymous)", f[1], f[2]]
             for f in json.loads(out.read_text()) if f[1]]
    stack[0][2] = spin_line()
    return p, stack


def profile(profd_bin, pprof, tmp_path, pid, *args, attached=False):
    """profd on @pid for 4 s at 99 Hz; the main thread's samples as
    (count, [[name, file, line], ...] JS frames leaf first). @attached:
    only those of the 1 s profiles after the first with a JS frame (the
    samples before profd attached to node, a moment that grows with the
    machine's load, are walked without V8's frames: their JS is gone)."""
    out = tmp_path / "out"
    r = subprocess.run([profd_bin, "--no-gpu", "--pid", str(pid), "--duration", "4",
                        "--profile-interval", "1",
                        "--sampling-frequency", "99", "--output-dir", str(out), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    samples = []
    paths = sorted(out.glob("cpu-*.pb.gz"))
    if attached:
        first = next((i for i, path in enumerate(paths)
                      if any(JS_FRAME.match(f) for s in pprof_traces(pprof, str(path), "-lines")
                             for f in s["frames"])), len(paths))
        paths = paths[first + 1:]
    for path in paths:
        for s in pprof_traces(pprof, str(path), "-lines"):
            if s["labels"].get("tid") != str(pid):
                continue
            js = []
            for f in s["frames"]:
                m = JS_FRAME.match(f)
                if m:
                    js.append([m.group(1), m.group(2), int(m.group(3) or 0)])
            samples.append((s["value"], js))
    return samples


def is_subsequence(got, want):
    it = iter(want)
    return all(any(g == w for w in it) for g in got)


@pytest.mark.parametrize("mode", ["interp", "jit", "inlined"])
def test_js_chain_in_profile(profd_bin, pprof, tmp_path, mode):
    p, stack = run_node(tmp_path, mode)
    try:
        samples = profile(profd_bin, pprof, tmp_path, p.pid, attached=True)
    finally:
        stop(p)
    total = sum(n for n, _ in samples)
    assert total >= 50, samples
    names = [f[0] for f in stack]
    assert names[:5] == ["leaf", "libHelper", "arrow", "method", "cmp"], stack
    good = 0
    for n, js in samples:
        if mode == "inlined":
            ok = (is_subsequence([f[:2] for f in js], [f[:2] for f in stack]) and
                  js and js[0][:2] == stack[0][:2] and js[-1][:2] == stack[-1][:2])
        else:
            ok = [f[:2] for f in js] == [f[:2] for f in stack]
        if ok:
            # lines: node's where read, 0 for compiled code; never another
            for g, e in zip(js, stack) if mode != "inlined" else []:
                assert g[2] in (e[2], 0), (g, e, js)
            if mode == "interp":
                assert [f[2] for f in js] == [f[2] for f in stack], (js, stack)
            good += n
    assert good >= 0.9 * total, (good, total, samples[:5], stack)


def test_native_tracer_only_has_no_js_frames(profd_bin, pprof, tmp_path):
    """The assertions above fail without the V8 walk: --tracers native."""
    p, stack = run_node(tmp_path, "interp")
    try:
        samples = profile(profd_bin, pprof, tmp_path, p.pid, "--tracers", "native")
    finally:
        stop(p)
    assert sum(n for n, _ in samples) >= 50
    assert not [js for _, js in samples if js], samples[:3]


# Functions TurboFan inlines into `hot` (checked with --trace-turbo-inlining),
# called from a class's method and constructor that stay interpreted
# (%NeverOptimizeFunction, --no-sparkplug); one function per line, so each
# frame's line is the line node gives for it. snap() writes node's own
# stack (CallSites) from inside inner2: once in the warm-up (the call has
# feedback then: optimized code calling it later is not deoptimized), then
# as the endless run starts (the stack the samples are compared with).
INLINE_JS = """'use strict';
const fs = require('fs');
Error.stackTraceLimit = Infinity;
let sink = 0, snapNow = false, snaps = 0;
function snap() { snapNow = false; const f = process.argv[2] + (++snaps === 1 ? '.warm' : ''); const saved = Error.prepareStackTrace; Error.prepareStackTrace = (e, cs) => cs.map(c => [c.getFunctionName() || '', c.getFileName() || '', c.getLineNumber() || 0]); const st = new Error().stack; Error.prepareStackTrace = saved; fs.writeFileSync(f + '.tmp', JSON.stringify(st)); fs.renameSync(f + '.tmp', f); }
function inner2(x) { if (snapNow) snap(); return (Math.imul(x, 1103515245) + 12345) | 0; }
function inner1(x) { return inner2(x) ^ (x >>> 3); }
function hot(n) { let s = 1; for (let i = 0; i < n; i++) s = inner1(s); return s; }
class Engine { constructor(k) { this.k = k; this.run(); } run() { for (let j = 0; j !== this.k; j++) sink ^= hot(3000); } }
%NeverOptimizeFunction(Engine);
%NeverOptimizeFunction(Engine.prototype.run);
%PrepareFunctionForOptimization(hot);
new Engine(20);
snapNow = true;
new Engine(1);
%OptimizeFunctionOnNextCall(hot);
new Engine(20);
snapNow = true;
new Engine(-1);
"""


def test_inlined_frames_with_lines(profd_bin, pprof, tmp_path):
    """Optimized code's inlined functions are frames of their own, every
    frame with node's line: each sample's JS frames are node's chain
    (snap() left out) from one of its frames on (the sample's leaf in
    inner2, inner1, hot, or the interpreted run)."""
    (tmp_path / "inl.js").write_text(INLINE_JS)
    out = tmp_path / "stack.json"
    log = tmp_path / "node.log"
    with open(log, "w") as err:
        p = start([NODE, "--allow-natives-syntax", "--no-sparkplug", "--trace-turbo-inlining",
                   str(tmp_path / "inl.js"), str(out)], stdout=err, stderr=err)
    try:
        wait_file(str(out), timeout=60)
        time.sleep(1.0)
        samples = profile(profd_bin, pprof, tmp_path, p.pid)
    finally:
        stop(p)
    trace = log.read_text()
    assert re.search(r"Inlining .*inner1.* into .*hot", trace), trace[-2000:]
    assert re.search(r"Inlining .*inner2.* into .*hot", trace), trace[-2000:]
    stack = [[f[0] or "(anonymous)", f[1], f[2]]
             for f in json.loads(out.read_text()) if f[1]]
    assert [f[0] for f in stack[:6]] == ["snap", "inner2", "inner1", "hot", "run", "Engine"], stack
    chain = stack[1:]
    short = lambda js: " ".join(f"{f[0]}:{f[2]}" for f in js)  # noqa: E731
    # samples without any JS frame: taken before profd had read the
    # process's V8 metadata (seconds on a loaded machine), not judged here
    samples = [(n, js) for n, js in samples if js]
    seen = [(n, short(js)) for n, js in samples[:10]]
    total = sum(n for n, _ in samples)
    assert total >= 50, samples
    good = inlined = 0
    for n, js in samples:
        if any(js == chain[k:] for k in range(4)):
            good += n
            if js[:2] == chain[1:3] or js[:3] == chain[:3]:
                inlined += n
    assert good >= 0.9 * total, (good, total, seen, short(chain))
    # the leaf in inner1's or inner2's code, inlined into hot: both shown
    assert inlined >= 0.1 * total, (inlined, total, seen, short(chain))


# Code churn (issue 19): many small functions, each its own source (new
# Function), run hot until V8 compiles them and then dropped, with garbage
# so that the GC frees them and reuses their memory, beside long-lived hot
# functions. Each churned pair encodes its id in both names (churnOuter_ID
# calls churnInner_ID); node reports its own stack at the hot leaf, inside
# a churned function and while one is made.
CHURN_JS = """'use strict';
const fs = require('fs');
const OUT = process.argv[2], SECS = +process.argv[3], GC = process.argv[4] === 'gc';
Error.stackTraceLimit = Infinity;
const reports = {};
function report(name) {
  if (reports[name]) return;
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (e, cs) => cs.map(c =>
    [c.getFunctionName() || '(anonymous)', c.getFileName() || '']);
  reports[name] = new Error().stack.slice(1);  // from report's caller on
  Error.prepareStackTrace = saved;
}
let sink = 0;
// PAD: bytecode past TurboFan's inlining limit, so each keeps its frame
function hotLeaf(n) {
  if (n < 0) report('hot');
  let x = n;
  for (let i = 0; i < 30000; i++) x = (x * 1103515245 + 12345) | 0;
  PAD
  return x;
}
function hotMiddle(n) { let x = hotLeaf(n) ^ 1; PAD return x; }
function hotOuter(n) { let x = hotMiddle(n) + 1; PAD return x; }
function makeChurn(id) {
  if (id === 0) report('make');
  // the anonymous function new Function makes returns the pair
  return new Function('rep', `if (rep) rep();
  return function churnOuter_${id}(n, rep) {
    function churnInner_${id}(m) {
      if (rep) rep();
      let s = ${id};
      for (let j = 0; j < m; j++) s = (s * 31 + j + ${id}) | 0;
      return s;
    }
    return churnInner_${id}(n) ^ ${id};
  };`)(id === 0 ? () => report('wrap') : null);
}
function runChurn(f, first) {
  let s = 0;
  for (let k = 0; k < 300; k++) s ^= f(200, first && k === 0 ? () => report('churn') : null);
  return s;
}
const live = [];
let garbage = [], next = 0;
const end = Date.now() + SECS * 1000;
hotOuter(-1);
while (Date.now() < end) {
  const id = next++;
  sink ^= runChurn(makeChurn(id), id === 0);
  live.push(id);
  for (let g = 0; g < 200; g++) garbage.push({ a: g, b: new Array(16).fill(id) });
  if (garbage.length > 20000) garbage = [];
  if (GC && id % 64 === 63) gc();
  for (let h = 0; h < 20; h++) sink ^= hotOuter(h);
  if (id === 0) {
    fs.writeFileSync(OUT + '.tmp', JSON.stringify(reports));
    fs.renameSync(OUT + '.tmp', OUT);
  }
}
fs.writeFileSync(OUT + '.made', String(next));
""".replace("PAD", "if (x === 0.5) {%s}" % " ".join(
    f"x = (x * {k} + sink) | 0; sink ^= x >>> {k % 31};" for k in range(3, 60)))
CHURN_MODES = {
    "default": [],
    # full GCs that compact every page they can (objects moved, memory of
    # the dropped functions reused), code flushed as soon as it may be
    "compact": ["--expose-gc", "--stress-compaction", "--stress-flush-code",
                "--flush-baseline-code"],
    "sparkplug": ["--always-sparkplug"],
}
CHURN_NAME = re.compile(r"^churn(Inner|Outer)_(\d+)$")
V8_PARTIAL = ("v8_frame_stale", "v8_frame_unmatched", "v8_leaf_unverified",
              "v8_leaf_unnamed", "v8_frame_unverified", "v8_name_unreadable",
              "v8_read_errors", "v8_frames_full", "v8_jit_frame_unnamed")


@pytest.mark.parametrize("run", range(2))
@pytest.mark.parametrize("mode", CHURN_MODES)
def test_code_churn_never_misnamed(profd_bin, pprof, tmp_path, mode, run):
    """No JS frame of a churning process is misnamed: each sample's JS
    frames (mapping [v8]), churned ids taken out, are a subsequence of one
    of node's own stacks (at the hot leaf, in a churned function, making
    one: a true subsequence, for frames TurboFan inlined or left unnamed),
    every churned frame of a sample has one id, one that was made; a JIT
    frame left unnamed is one the profile counts."""
    script = tmp_path / "churn.js"
    script.write_text(CHURN_JS)
    rep = tmp_path / "reports.json"
    secs = 6
    p = start([NODE, *CHURN_MODES[mode], str(script), str(rep), str(secs + 2),
               "gc" if mode == "compact" else ""], stderr=subprocess.DEVNULL)
    try:
        wait_file(str(rep), timeout=60)
        out = tmp_path / "out"
        r = subprocess.run([profd_bin, "--no-gpu", "--pid", str(p.pid), "--duration", str(secs),
                            "--sampling-frequency", "99", "--output-dir", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert p.wait(timeout=60) == 0
    finally:
        stop(p)
    made = int((tmp_path / "reports.json.made").read_text())
    chains = {k: [tuple(f) for f in v] for k, v in json.loads(rep.read_text()).items()}
    assert set(chains) == {"hot", "make", "wrap", "churn"}, chains
    for k in ("wrap", "churn"):
        chains[k] = chains[k][1:]  # from the reporting arrow's caller on
    # node's CallSite names the function new Function made "eval" (its
    # script is an eval's); V8 gives it no name of its own
    assert chains["wrap"][0] == ("eval", ""), chains["wrap"]
    chains["wrap"][0] = ("(anonymous)", "")
    assert [f[0] for f in chains["churn"][:2]] == ["churnInner_0", "churnOuter_0"], chains
    chains["churn"] = [("churnInner_ID", "")] + chains["churn"][1:]
    chains["churn"][1] = ("churnOuter_ID", "")
    samples, raw = [], ""
    for path in sorted(out.glob("cpu-*.pb.gz")):
        samples += [s for s in pprof_raw_samples(pprof, str(path))
                    if s["labels"].get("tid") == str(p.pid)]
        raw += comments(pprof, str(path))
    total = sum(s["value"] for s in samples)
    assert total >= 15, total  # a loaded machine gives the process less
    churned = hot = unnamed = 0
    leaves = {}
    for s in samples:
        js, ids = [], set()
        for f in s["frames"]:
            if f["mapping"] != "[v8]" or f["function"].startswith("[v8: "):
                continue  # a loss marker (counted), no JS frame
            m = CHURN_NAME.match(f["function"])
            if m:
                ids.add(int(m.group(2)))
                js.append((f"churn{m.group(1)}_ID", f["file"]))
            else:
                js.append((f["function"], f["file"]))
        assert len(ids) <= 1 and all(i < made for i in ids), (ids, made, s["frames"])
        if js:
            assert any(is_subsequence(js, c) for c in chains.values()), (js, chains["wrap"], s["frames"][:8])
        if js:
            leaves[js[0]] = leaves.get(js[0], 0) + s["value"]
        churned += s["value"] if ids else 0
        hot += s["value"] if js and js[0] in chains["hot"][:3] else 0
        # a JIT frame (anonymous code) in a JS stack: not named
        if js:
            unnamed += s["value"] * sum(f["mapping"] == "[anon]" for f in s["frames"])
    # not vacuous: churned and long-lived functions named in many samples
    assert churned >= max(5, 0.05 * total) and hot >= max(5, 0.05 * total), \
        (churned, hot, total, leaves)
    partial = sum(counter_value(raw, "partial." + c) for c in V8_PARTIAL)
    assert unnamed <= partial, (unnamed, {c: counter_value(raw, "partial." + c)
                                          for c in V8_PARTIAL})


def counter_value(raw, name):
    """The sum of counter @name over the profiles' comments (0 if absent)."""
    return sum(int(line.split("=")[1]) for line in raw.splitlines()
               if line.strip().startswith(f"Comment: {name}="))


# Issue 19: the hot leaf is a small comparator TurboFan optimized, called
# back from Array.prototype.sort's builtins (Torque: ArrayTimSort, MergeAt,
# SortCompareUserFn). Much of its time is in its prologue (the check that
# its code is not deoptimized, before `push rbp`) and epilogue, where it
# has no frame: rbp is its caller's, the native walk skips that caller.
# snap() writes node's own stack from inside the comparator once.
SORT_JS = """'use strict';
const fs = require('fs');
Error.stackTraceLimit = Infinity;
let snapNow = false;
function snap() {
  snapNow = false;
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (e, cs) => cs.map(c =>
    [c.getFunctionName() || '', c.getFileName() || '', c.getLineNumber() || 0]);
  const st = new Error().stack;
  Error.prepareStackTrace = saved;
  fs.writeFileSync(process.argv[2] + '.tmp', JSON.stringify(st.slice(1)));
  fs.renameSync(process.argv[2] + '.tmp', process.argv[2]);
}
function byKey(a, b) {
  if (snapNow) snap();
  return a - b;
}
function sortRound(src, work) {
  for (let i = 0; i < src.length; i++) work[i] = src[i];
  work.sort(byKey);
  return work[0];
}
function outer(n) {
  const src = [], work = [];
  let x = 12345;
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) & 0x7fffffff; src.push(x); work.push(0); }
  let sink = 0;
  for (let r = 0; ; r++) {
    if (r === 50) snapNow = true;
    sink ^= sortRound(src, work);
  }
}
outer(5000);
"""
UNNAMED = re.compile(r"^(\[\[?anon\]?\]|\[v8: .*\]|\[truncated\]|0x[0-9a-f]+)")


def test_sort_comparator_leaf_named(profd_bin, pprof, tmp_path):
    """An optimized comparator as the leaf, called from the sort builtins:
    >= 95 % of the main thread's samples (once attached) have every frame
    named and node's own JS chain (from the comparator, or from sortRound
    for a leaf in the builtins); a sample in the comparator has the
    builtin that called it next (the caller a leaf without a frame hides
    from the native walk is put back, by its return address)."""
    (tmp_path / "sort.js").write_text(SORT_JS)
    out = tmp_path / "stack.json"
    p = start([NODE, str(tmp_path / "sort.js"), str(out)], stderr=subprocess.DEVNULL)
    try:
        wait_file(str(out), timeout=60)
        time.sleep(1.0)
        outdir = tmp_path / "out"
        r = subprocess.run([profd_bin, "--no-gpu", "--pid", str(p.pid), "--duration", "5",
                            "--profile-interval", "1", "--sampling-frequency", "99",
                            "--output-dir", str(outdir)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    stack = [[f[0] or "(anonymous)", f[1]] for f in json.loads(out.read_text()) if f[1]]
    assert [f[0] for f in stack[:3]] == ["byKey", "sortRound", "outer"], stack
    paths = sorted(outdir.glob("cpu-*.pb.gz"))
    first = next((i for i, path in enumerate(paths)
                  if any(JS_FRAME.match(f) for s in pprof_traces(pprof, str(path), "-lines")
                         for f in s["frames"])), len(paths))
    total = good = in_leaf = 0
    bad = []
    for path in paths[first + 1:]:
        for s in pprof_traces(pprof, str(path), "-lines"):
            if s["labels"].get("tid") != str(p.pid):
                continue
            frames = s["frames"]
            js = [list(m.group(1, 2)) for m in map(JS_FRAME.match, frames) if m]
            total += s["value"]
            ok = not any(UNNAMED.match(f) for f in frames) and js in (stack, stack[1:])
            if ok and js == stack:
                # the comparator's caller: a sort builtin, never skipped
                k = next(i for i, f in enumerate(frames) if JS_FRAME.match(f))
                ok = len(frames) > k + 1 and frames[k + 1].startswith("Builtins_")
                in_leaf += s["value"] if ok else 0
            if ok:
                good += s["value"]
            else:
                bad.append((s["value"], frames[:5]))
    assert total >= 50, (total, bad[:5])
    assert in_leaf >= 0.05 * total, (in_leaf, total, bad[:5])
    assert good >= 0.95 * total, (good, total, in_leaf, bad[:8])



# Issue 19: baseline (Sparkplug) frames carry lines. Every function is
# baseline code (--always-sparkplug; --no-opt: none goes on to TurboFan),
# %GetOptimizationStatus says so (kBaseline, bit 15). The leaf spins in a
# loop of LEAF_FIRST..LEAF_LAST; snap() writes node's own stack from
# inside the leaf once (its callers' call sites are the lines to show).
BASELINE_JS = """'use strict';
const fs = require('fs');
Error.stackTraceLimit = Infinity;
let sink = 0, snapNow = false;
function snap() {
  snapNow = false;
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (e, cs) => cs.map(c =>
    [c.getFunctionName() || '', c.getFileName() || '', c.getLineNumber() || 0]);
  const st = new Error().stack.slice(1);
  Error.prepareStackTrace = saved;
  const status = [leaf, middle, outer].map(f => %GetOptimizationStatus(f));
  fs.writeFileSync(process.argv[2] + '.tmp', JSON.stringify({ st, status }));
  fs.renameSync(process.argv[2] + '.tmp', process.argv[2]);
}
function leaf(n) {  // LEAF_FIRST
  if (snapNow) snap();
  let x = n;
  for (let i = 0; i < 20000; i++) {
    x = (x * 1103515245 + 12345) | 0;
    x ^= x >>> 7;
  }
  return x;
}  // LEAF_LAST
function middle(n) {
  let y = 0;
  y ^= leaf(n) + 1;
  return y;
}
function outer() {
  for (let r = 0; ; r++) {
    if (r === 200) snapNow = true;
    sink ^= middle(r);
  }
}
outer();
"""


def marked_line(src, mark):
    return next(i for i, line in enumerate(src.splitlines(), 1) if mark in line)


def test_baseline_frames_have_lines(profd_bin, pprof, tmp_path):
    """Baseline (Sparkplug) frames are named with their lines: >= 90 % of
    the main thread's samples (once attached) show node's chain (leaf,
    middle, outer, node's module loader) with the leaf's line in its
    body and each caller's line node's own (the call site)."""
    (tmp_path / "bl.js").write_text(BASELINE_JS)
    out = tmp_path / "stack.json"
    p = start([NODE, "--always-sparkplug", "--no-opt", "--allow-natives-syntax",
               str(tmp_path / "bl.js"), str(out)], stderr=subprocess.DEVNULL)
    try:
        wait_file(str(out), timeout=60)
        time.sleep(0.5)
        samples = profile(profd_bin, pprof, tmp_path, p.pid, attached=True)
    finally:
        stop(p)
    snap = json.loads(out.read_text())
    assert all(s & (1 << 15) for s in snap["status"]), snap  # kBaseline
    stack = [[f[0] or "(anonymous)", f[1], f[2]] for f in snap["st"] if f[1]]
    assert [f[0] for f in stack[:3]] == ["leaf", "middle", "outer"], stack
    first = marked_line(BASELINE_JS, "LEAF_FIRST")
    last = marked_line(BASELINE_JS, "LEAF_LAST")
    assert first < stack[0][2] < last, (stack, first, last)
    total = sum(n for n, _ in samples)
    assert total >= 50, samples
    good, bad = 0, {}
    for n, js in samples:
        if ([f[:2] for f in js] == [f[:2] for f in stack] and
                first < js[0][2] < last and
                [f[2] for f in js[1:]] == [f[2] for f in stack[1:]]):
            good += n
        else:
            k = " ".join(f"{f[0]}:{f[2]}" for f in js[:6])
            bad[k] = bad.get(k, 0) + n
    seen = (sorted(bad.items(), key=lambda kv: -kv[1])[:8],
            " ".join(f"{f[0]}:{f[2]}" for f in stack[:6]))
    assert good >= 0.9 * total, (good, total, seen, stack[:3])


BUSY_BASELINE_JS = r"""
'use strict';
const fs = require('fs');
function cmpKeys(a, b) { return (a.k - b.k) || (a.j - b.j); }
function sortWork(arr) { const c = arr.slice(); c.sort(cmpKeys); return c[0].k; }
function tiny(x) { return (x * 31 + 7) & 0xffff; }
function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s = tiny(s + i); return s; }
function parseWork(str) { return JSON.parse(str).length; }
const arr = [];
for (let i = 0; i < 20000; i++) arr.push({k: (i * 7919) % 10007, j: i});
const str = JSON.stringify(arr);
fs.writeFileSync(process.argv[2], 'ready');
const end = Date.now() + 15000;
let t = 0;
while (Date.now() < end) { t += sortWork(arr); t += hotLoop(1e6); t += parseWork(str); }
console.log(t);
"""


def test_baseline_frames_read_cheaply(profd_bin, pprof, tmp_path):
    """Every frame baseline code (--always-sparkplug) in a busy program:
    naming them must not read so much of node's memory that the remote
    reader's slow-memory budget shuns the process (then every read fails
    and JS frames go stale: 87 of 350 stacks kept them when each frame
    read its whole BytecodeArray per sample): >= 90 % of the main
    thread's samples keep the program's own functions."""
    (tmp_path / "busy.js").write_text(BUSY_BASELINE_JS)
    ready = tmp_path / "ready"
    p = start([NODE, "--always-sparkplug", str(tmp_path / "busy.js"), str(ready)],
              stderr=subprocess.DEVNULL)
    try:
        wait_file(str(ready), timeout=60)
        samples = profile(profd_bin, pprof, tmp_path, p.pid, attached=True)
    finally:
        stop(p)
    total = sum(n for n, _ in samples)
    own = sum(n for n, js in samples
              if any(f[0] in ("sortWork", "hotLoop", "parseWork") for f in js))
    assert total >= 50, samples[:5]
    assert own >= 0.9 * total, (own, total)
