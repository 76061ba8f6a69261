"""V8 (node): the layout read from node's own v8dbg_ postmortem metadata
(src/v8/metadata.c) and JS frames of a stopped thread named from user
space (src/v8/frames.c), against node's own view.

- tests/unit/v8_walk.c stops the main thread of a running node 20 (ptrace),
  walks its frame-pointer chain and names each V8 frame.
- The program (written here) spins at a known hot spot under a known call
  chain: f1 -> f2 -> f3 -> Array.prototype.sort -> a comparator -> a class
  method -> an arrow function -> a function of a second file (require) ->
  the leaf, which first writes its own stack as node sees it
  (Error.prepareStackTrace's CallSites: function name, file, line).
- The walk's JS frames must be exactly those, in order: names and files
  always, lines of interpreted frames (the leaf's: its spin loop's line,
  from the interpreter's bytecode offset register); frames of compiled
  code have no line yet (0), never another.
- Interpreted only (--jitless) and JIT-compiled (Sparkplug for all,
  TurboFan for the chain through %OptimizeFunctionOnNextCall, the leaf's
  loop by on-stack replacement; --no-turbo-inlining: inlined frames are
  not expanded yet).
- The metadata's values against nm's view of the same symbols; a wrong
  layout offset gives no names or fails the comparison (the test is not
  vacuous); a process killed mid-walk is counted read errors, no crash.
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import start, stop, unit_program, wait_file

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

LIB_JS = """'use strict';
// a second file, loaded with require()
function libHelper(cb) {
  return cb();
}
module.exports = { libHelper };
"""

MAIN_JS = """'use strict';
const { libHelper } = require('./lib.js');
const fs = require('fs');
const JIT = process.argv[3] === 'jit';
Error.stackTraceLimit = Infinity;
let sink = 0;
let warm = true;
function leaf() {
  if (warm) return 0;
  if (process.argv[4] === 'quiet') {  // no stack trace: V8 computes no line ends
    fs.writeFileSync(process.argv[2], '[]');
    let y = 1;
    for (;;) { y = (y * 1103515245 + 12345) | 0; sink ^= y; }  // SPIN
  }
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (e, cs) => cs.map(c =>
    [c.getFunctionName() || '', c.getFileName() || '', c.getLineNumber() || 0]);
  const st = new Error().stack;
  Error.prepareStackTrace = saved;
  fs.writeFileSync(process.argv[2] + '.tmp', JSON.stringify(st));
  fs.renameSync(process.argv[2] + '.tmp', process.argv[2]);
  let x = 1;
  for (;;) { x = (x * 1103515245 + 12345) | 0; sink ^= x; }  // SPIN
}
const arrow = () => libHelper(leaf);
class Widget {
  method() { return arrow(); }
}
function cmp(a, b) {
  new Widget().method();
  return a - b;
}
function f3() { return [3, 1, 2].sort(cmp); }
function f2() { return f3(); }
function f1() { return f2(); }
if (JIT) {
  const fns = [f1, f2, f3, cmp, Widget.prototype.method, arrow, leaf];
  for (const f of fns) eval('%PrepareFunctionForOptimization(f)');
  for (let i = 0; i < 2000; i++) f1();
  for (const f of fns) eval('%OptimizeFunctionOnNextCall(f)');
  f1();
}
warm = false;
f1();
"""

MODES = {
    "interp": ["--jitless"],
    "jit": ["--always-sparkplug", "--allow-natives-syntax", "--no-turbo-inlining"],
}


def spin_line(quiet=False):
    lines = [i for i, line in enumerate(MAIN_JS.splitlines(), 1) if "// SPIN" in line]
    return lines[0] if quiet else lines[1]


@pytest.fixture(scope="module")
def walker():
    return unit_program("v8_walk", env="PROFD_V8_WALK")


def run_node(tmp_path, mode, quiet=False):
    """Start the program; return (process, node's own stack as
    [name, file, line] leaf first; [] when @quiet)."""
    (tmp_path / "lib.js").write_text(LIB_JS)
    (tmp_path / "main.js").write_text(MAIN_JS)
    out = tmp_path / "stack.json"
    p = start([NODE, *MODES[mode], str(tmp_path / "main.js"), str(out), mode,
               "quiet" if quiet else "stack"], stderr=subprocess.DEVNULL)
    try:
        wait_file(str(out), timeout=60)
    except AssertionError:
        stop(p)
        raise
    # the file appears in renameSync(): let the leaf reach its loop
    time.sleep(0.3)
    return p, json.loads(out.read_text())


def walk(walker, pid, *args):
    r = subprocess.run([walker, *args, str(pid)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    frames, counters = [], {}
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "counter":
            counters[f[1]] = int(f[2])
        elif f[0] != "layout":
            frames.append(f)
    return frames, counters, r.stdout


def expected(stack, quiet=False):
    """Node's stack, the leaf's line moved to its spin loop (where it is
    stopped; node's line is where it made the Error)."""
    exp = [list(f) for f in stack]
    exp[0][2] = spin_line(quiet)
    return exp


def check_walk(frames, stack, out, quiet=False):
    """The walk's JS frames equal node's own, in order; a line where read
    (@quiet: node's own modules, whose sources are external strings, may
    have none where V8 computed no line ends)."""
    js = [f for f in frames if f[0] == "js"]
    exp = expected(stack, quiet)
    got = [[f[1], f[2], int(f[3])] for f in js]
    assert [g[:2] for g in got] == [e[:2] for e in exp], out
    for g, e, f in zip(got, exp, js):
        if f[4] == "interp" and not (quiet and g[2] == 0 and g[1].startswith("node:")):
            assert g[2] == e[2], f"line of {g[0]}: {g[2]} != {e[2]}\n{out}"
        elif f[4] != "interp":
            assert g[2] == 0, out
    assert not [f for f in frames if f[0] in ("unverified", "error")], out
    return js


@pytest.mark.parametrize("mode", ["interp", "jit"])
def test_js_frames_named_as_node_sees_them(tmp_path, walker, mode):
    p, stack = run_node(tmp_path, mode)
    try:
        assert stack[0][0] == "leaf" and stack[1][0] == "libHelper"
        assert any(f[0] == "sort" for f in stack) and any(f[0] == "method" for f in stack)
        if mode == "jit":
            time.sleep(1.0)	# the leaf's loop is replaced on the stack (OSR)
        kinds = set()
        for _ in range(5):
            frames, counters, out = walk(walker, p.pid)
            js = check_walk(frames, stack, out)
            kinds |= {f[4] for f in js if f[1] in ("leaf", "f1", "f2", "f3", "cmp")}
            assert counters["v8_frame_unverified"] == 0
            assert counters["v8_metadata_missing"] == 0
            time.sleep(0.1)
        if mode == "interp":
            assert kinds == {"interp"}
        else:
            # the chain runs TurboFan / Sparkplug code: pcs in JIT code
            assert "jit" in kinds, kinds
    finally:
        stop(p)


def test_lines_without_line_ends(tmp_path, walker):
    """A program that never asked for a stack trace: V8 has no line ends
    for its scripts; lines are counted in the sources, equal to those node
    gives the same program asking for one."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p, stack = run_node(tmp_path / "a", "interp")
    stop(p)
    stack = [[f[0], f[1].replace(str(tmp_path / "a"), str(tmp_path / "b")), f[2]]
             for f in stack]
    p, _ = run_node(tmp_path / "b", "interp", quiet=True)
    try:
        frames, counters, out = walk(walker, p.pid)
        js = check_walk(frames, stack, out, quiet=True)
        user = [f for f in js if f[2].startswith(str(tmp_path))]
        assert len(user) == 9 and all(int(f[3]) > 0 for f in user), out
    finally:
        stop(p)


def test_scope_info_with_many_locals(tmp_path, walker):
    """A function with 80 context locals (past V8 11.3's 75 inlined local
    names its ScopeInfo keeps a hash table instead): named as node names
    it."""
    n = 80
    decl = " ".join(f"let v{i} = {i};" for i in range(n))
    use = "+".join(f"v{i}" for i in range(n))
    out = tmp_path / "stack.json"
    (tmp_path / "many.js").write_text(f"""'use strict';
const fs = require('fs');
let sink = 0;
function manyLocals() {{
  {decl}
  const g = () => {use};
  sink = g();
  Error.prepareStackTrace = (e, cs) => cs.map(c => c.getFunctionName() || '');
  fs.writeFileSync(process.argv[2], JSON.stringify(new Error().stack));
  let x = 1;
  for (;;) {{ x = (x * 3 + 1) | 0; sink ^= x; }}
}}
function outer() {{ manyLocals(); }}
outer();
""")
    p = start([NODE, "--jitless", str(tmp_path / "many.js"), str(out)],
              stderr=subprocess.DEVNULL)
    try:
        wait_file(str(out), timeout=60)
        time.sleep(0.3)
        names = json.loads(out.read_text())
        frames, counters, text = walk(walker, p.pid)
        got = [f[1] for f in frames if f[0] == "js"]
        assert names[:2] == ["manyLocals", "outer"] and got == names, text
        assert counters["v8_name_unreadable"] == 0, text
    finally:
        stop(p)


# V8's table of bytecode sizes (uint8_t[3][kBytecodeCount]), for baseline code
BYTECODE_SIZES = "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"


def nm_values(path):
    """v8dbg_ symbols' values read here, independently of metadata.c:
    nm's addresses and sizes, the bytes at them through the PT_LOADs."""
    syms = subprocess.run(["nm", "-D", "-S", path], capture_output=True, text=True,
                          check=True).stdout
    loads = []
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    vals = {}
    with open(path, "rb") as fh:
        for line in syms.splitlines():
            f = line.split()
            if len(f) != 4 or not (f[3].startswith("v8dbg_") or f[3] == BYTECODE_SIZES):
                continue
            addr, size = int(f[0], 16), int(f[1], 16)
            for off, va, filesz in loads:
                if va <= addr < va + filesz:
                    fh.seek(off + addr - va)
                    data = fh.read(size)
                    vals[f[3]] = (data if f[3] == BYTECODE_SIZES else
                                  int.from_bytes(data, "little", signed=True))
                    break
            else:
                vals[f[3]] = 0	# .bss
    return vals


def test_layout_is_nm_view(tmp_path, walker):
    """The layout's values are the symbols' (a second reader: nm + readelf)."""
    exe = os.path.realpath(NODE)
    v = nm_values(exe)
    r = subprocess.run([walker, "--dump-layout", exe], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = dict(line.split("\t")[1:3] for line in r.stdout.splitlines()
               if line.startswith("field\t"))
    pairs = {
        "fp_context": "v8dbg_off_fp_context_or_frame_type",
        "fp_function": "v8dbg_off_fp_function",
        "fp_bytecode_array": "v8dbg_off_fp_bytecode_array",
        "fp_bytecode_offset": "v8dbg_off_fp_bytecode_offset",
        "js_function_shared": "v8dbg_class_JSFunction__shared__SharedFunctionInfo",
        "sfi_name_or_scope_info": "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object",
        "script_name": "v8dbg_class_Script__name__Object",
        "t_js_function": "v8dbg_type_JSFunction__JS_FUNCTION_TYPE",
        "t_scope_info": "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE",
        "heap_object_map": "v8dbg_class_HeapObject__map__Map",
        "bytecode_array_data": "v8dbg_class_BytecodeArray__data__uintptr_t",
        "offset_register": "v8dbg_InterpreterBytecodeOffsetRegister",
    }
    for member, sym in pairs.items():
        assert int(got[member]) == v[sym], (member, got[member], v[sym])
    # node 20 is V8 11.3 without pointer compression (8-byte tagged fields)
    assert v["v8dbg_TaggedSize"] == 8 and got["version"] == "11.3"
    assert got["features"] == "0x7f" and got["missing"] == "0"
    assert int(got["code_offset_table"]) == v["v8dbg_class_Code__bytecode_offset_table__ByteArray"]
    sizes = v[BYTECODE_SIZES]
    assert int(got["nbytecodes"]) == len(sizes) // 3 and got["nprefixes"] == "4"
    assert got["bytecode_sizes"] == sizes.hex()


PERTURB_UNNAMED = ["js_function_shared=8", "fp_function=-8", "map_instance_type=2",
                   "t_js_function=1"]


@pytest.mark.parametrize("perturb", PERTURB_UNNAMED)
def test_wrong_layout_names_nothing(tmp_path, walker, perturb):
    """A wrong offset or type fails the checks: frames unnamed and counted,
    never named wrongly; the comparison fails."""
    p, stack = run_node(tmp_path, "interp")
    try:
        frames, counters, out = walk(walker, p.pid, "--perturb", perturb)
        assert not [f for f in frames if f[0] == "js"], out
        assert counters["v8_frame_unverified"] > 0, out
        with pytest.raises(AssertionError):
            check_walk(frames, stack, out)
    finally:
        stop(p)


@pytest.mark.parametrize("perturb", ["seq_one_byte_chars=1", "bytecode_array_data=1",
                                     "script_line_ends=8", "sfi_name_or_scope_info=8"])
def test_wrong_layout_fails_the_comparison(tmp_path, walker, perturb):
    """Offsets the reads cannot check (bytes of a string, the bytecode
    header) are caught by the oracle: the test is not vacuous."""
    p, stack = run_node(tmp_path, "interp")
    try:
        frames, counters, out = walk(walker, p.pid, "--perturb", perturb)
        with pytest.raises(AssertionError):
            check_walk(frames, stack, out)
    finally:
        stop(p)


def test_process_gone_mid_walk(tmp_path, walker):
    """The process dies after it is stopped, before its frames are read:
    read errors counted, nothing named, no crash."""
    p, _ = run_node(tmp_path, "interp")
    try:
        frames, counters, out = walk(walker, p.pid, "--kill")
        assert not [f for f in frames if f[0] == "js"], out
        assert counters["v8_read_errors"] >= 1, out
        assert re.search(r"^error\t-3$", out, re.M), out	# -ESRCH
    finally:
        stop(p)
