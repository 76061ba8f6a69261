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
  frames of compiled code have node's line or 0 (baseline code).
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
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import start, stop, wait_file
from pprof_traces import pprof_traces
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
