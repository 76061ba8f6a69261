"""Go's stacks across cgo callbacks: the real profd against
tests/workloads/gocgo (built here with /usr/bin/go and gcc, its C code
once with frame pointers and once with -fomit-frame-pointer), read back
with Google's pprof.

A Go function calls C through cgo (runtime.cgocall, runtime.asmcgocall:
the C code runs on the thread's system stack, g0), and the C code calls
an exported Go function back (crosscall2, runtime.cgocallback: back on
the goroutine's stack, cgocallbackg, cgocallbackg1, _cgoexp_..., the Go
function). The true chain of a sample in the callback is Go's own
(runtime.Callers, printed by the workload) with its
runtime.systemstack_switch (the return pc cgocallback plants on the
goroutine's stack) replaced by the frames on g0 between: crosscall2, the
C stub of the exported function, the C functions (cInner, cOuter; or
cDeep), cgo's C trampoline when it calls the C function Go called (not
when it jumps there: objdump), runtime.asmcgocall; and with the ABI
wrapper between cgocallback and cgocallbackg, which Go's traceback leaves
out.

Asserted per callback (goSpin: spins; goAlloc: allocates, so mallocgc
switches to g0 again inside the callback; goDeep: spins in a callback
called from C called from the callback goNest, two levels of C frames
on g0): >= 95 % of the samples through it have exactly that chain from
it down, and none shows an untrue caller: from the callback down, every
sample is a prefix of the chain (cut short, never wrong). Every sample
through runtime.cgocallback, crosscall2, cInner or cDeep is a prefix of
a chain from one of its places there; below runtime.asmcgocall (which the runtime also
calls from g0 for its own C calls, such as mmap) is always a function
whose code calls it (objdump); and tests/untrue_frames.py finds every
caller of every stack after a call instruction. About 30 s; needs root,
/usr/bin/go and gcc.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from test_dwarf import counters
from untrue_frames import Checker
from test_go_unwind import (GO, Symbols, go_chains, go_info, go_name, load_segments,
                            readelf_sections, run, show, user_frames)

SRC = os.path.join(ROOT, "tests", "workloads", "gocgo")
VARIANTS = {
    "fp": "-g -O2 -fno-omit-frame-pointer",
    "nofp": "-g -O2 -fomit-frame-pointer",
}
HOT = ("main.goSpin", "main.goAlloc", "main.goDeep")
EXACT = 0.95
MIN_SAMPLES = {"main.goSpin": 30, "main.goAlloc": 20, "main.goDeep": 30}

pytestmark = pytest.mark.skipif(GO is None or not shutil.which("gcc"),
                                reason="no Go toolchain (golang-go) or no gcc")


@pytest.fixture(scope="module")
def cgo_build(tmp_path_factory):
    """{variant: path}: the workload with its C code built per VARIANTS."""
    out = tmp_path_factory.mktemp("gocgo")
    paths = {}
    for variant, cflags in VARIANTS.items():
        env = dict(os.environ, GOCACHE=str(out / "cache"), GOFLAGS="-mod=mod",
                   CGO_ENABLED="1", CGO_CFLAGS=cflags, GOTOOLCHAIN="local")
        dst = str(out / f"gocgo-{variant}")
        subprocess.run([GO, "build", "-o", dst, "."], cwd=SRC, env=env, check=True)
        paths[variant] = dst
    return paths


def call_graph(binary, name=go_name):
    """{function: (callees by call, callees by jmp)} from objdump, the
    symbols named by @name."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True,
                         capture_output=True, text=True).stdout
    graph, fn = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            fn = name(m.group(1))
            graph.setdefault(fn, (set(), set()))
            continue
        m = re.search(r"\b(call|jmp)\s+[0-9a-f]+ <([^+>]+)>", line)
        if fn and m:
            graph[fn][0 if m.group(1) == "call" else 1].add(name(m.group(2)))
    return graph


class ExeSymbols(Symbols):
    """Symbols of the executable's code alone: an address elsewhere (libc's
    signal restorer, say) is named by its address, not by the nearest
    symbol below it."""

    def __init__(self, binary):
        super().__init__(binary)
        addr, _off, size = readelf_sections(binary)[".fini"]
        self.end = addr + size

    def name(self, addr):
        return super().name(addr) if addr < self.end else f"0x{addr:x}"


# The C frames under each C function Go calls, innermost first, down to it.
C_CALLS = {"cOuter": ["cInner", "cOuter"], "cDeep": ["cDeep"]}


def true_chains(binary):
    """{callback: the true chain}: Go's with each runtime.systemstack_switch
    replaced by the frames on g0 (the C code's calls checked by objdump),
    and with cgocallbackg's ABI wrapper."""
    graph = call_graph(binary)
    calls = {fn: c for fn, (c, _j) in graph.items()}
    # cgocallback (assembly, ABI0) calls cgocallbackg (Go) through its ABI
    # wrapper, a frame of its own that Go's traceback leaves out
    raw = call_graph(binary, name=lambda n: n)
    assert "runtime.cgocallbackg" in raw["runtime.cgocallbackg.abi0"][0], \
        raw.get("runtime.cgocallbackg.abi0")
    assert "runtime.cgocallback" in calls["crosscall2"], graph["crosscall2"]
    for fns in C_CALLS.values():
        for callee, caller in zip(fns, fns[1:]):
            assert callee in calls[caller], (caller, graph[caller])
    chains = {}
    for hot, chain in go_chains(binary, HOT).items():
        out = []
        for i, fn in enumerate(chain):
            if fn == "runtime.cgocallbackg":
                out += [fn, fn]     # the wrapper
                continue
            if fn != "runtime.systemstack_switch":
                out.append(fn)
                continue
            # ... <- _cgoexp_<hash>_STUB <- ... <- cgocallback <- [here]
            # <- cgocall <- main._Cfunc_CFUNC <- ...
            stub = [f for f in chain[:i] if f.startswith("_cgoexp_")][-1].split("_", 3)[3]
            cfunc = chain[i + 2][len("main._Cfunc_"):]
            assert chain[i - 1] == "runtime.cgocallback" and chain[i + 1] == "runtime.cgocall"
            assert "crosscall2" in calls[stub] and stub in calls[C_CALLS[cfunc][0]], stub
            tramp = [f for f in graph if re.match(rf"_cgo_[0-9a-f]+_Cfunc_{cfunc}$", f)]
            assert len(tramp) == 1, tramp
            assert cfunc in calls[tramp[0]] | graph[tramp[0]][1], graph[tramp[0]]
            out += ["crosscall2", stub] + C_CALLS[cfunc]
            if cfunc in calls[tramp[0]]:
                out.append(tramp[0])    # a call, not a tail jump: a frame of its own
            out.append("runtime.asmcgocall")
        chains[hot] = out
    return chains


def is_prefix(frames, want):
    return frames == want[:len(frames)]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_cgo_callback_stacks(profd_bin, pprof, tmp_path, build_dir, cgo_build, variant):
    binary = cgo_build[variant]
    if go_info(build_dir, binary)["curg"] == "0":
        pytest.skip("this Go's m.curg offset is unknown (not in src/unwind/go.c's "
                    "version table, no DWARF)")
    want = true_chains(binary)
    asm_callers = {fn for fn, (c, _j) in call_graph(binary).items()
                   if "runtime.asmcgocall" in c}
    syms = ExeSymbols(binary)
    segs = load_segments(binary)
    samples, err, paths = run(profd_bin, pprof, tmp_path, binary)
    assert samples, err

    n, exact, untrue, inexact = dict.fromkeys(HOT, 0), dict.fromkeys(HOT, 0), {}, {}
    on_g0 = 0       # callback samples on g0 again (runtime.systemstack above it)
    for s in samples:
        frames = user_frames(s, syms, binary, segs)
        key = tuple(frames) + (("[truncated]",) if any("[truncated]" in f for f in
                                                       s["frames"]) else ())
        bad = False
        for hot in HOT:
            if hot not in frames:
                continue
            tail = frames[frames.index(hot):]
            n[hot] += s["value"]
            on_g0 += s["value"] * ("runtime.systemstack" in frames[:frames.index(hot)])
            if tail == want[hot]:
                exact[hot] += s["value"]
            else:
                inexact[key] = inexact.get(key, 0) + s["value"]
            bad |= not is_prefix(tail, want[hot])
        for anchor in ("runtime.cgocallback", "crosscall2", "cInner", "cDeep"):
            if anchor in frames:
                tail = frames[frames.index(anchor):]
                # from any of its places in a chain: goDeep's has two
                # crosscall2s, and a sample in the outer C stub after the
                # inner callback returned (_cgo_release_context) is under
                # the outer one
                bad |= not any(is_prefix(tail, w[j:]) for w in want.values()
                               for j, fn in enumerate(w) if fn == anchor)
        if "runtime.asmcgocall" in frames:
            i = frames.index("runtime.asmcgocall")
            bad |= i + 1 < len(frames) and frames[i + 1] not in asm_callers
        if bad:
            untrue[key] = untrue.get(key, 0) + s["value"]
    note = ("\nthe true chains:\n" + "\n".join(f"  {' <- '.join(w)}" for w in want.values()) +
            "\nnon-zero counters: " + "; ".join(counters(pprof, paths)) +
            "\nprofd stderr:\n" + err.strip())

    assert not untrue, f"{variant}: stacks with an untrue caller:\n{show(untrue)}" + note
    for hot in HOT:
        assert n[hot] >= MIN_SAMPLES[hot], f"{variant}: {n[hot]} samples in {hot}" + note
        assert exact[hot] >= EXACT * n[hot], (
            f"{variant}: {exact[hot]}/{n[hot]} samples through {hot} with the exact "
            f"chain; the others:\n{show(inexact)}" + note)
    assert any("stat.go_stack_switches" in c for c in counters(pprof, paths)), note
    # and every caller of every stack follows a call (its own decoder)
    checker = Checker()
    for p in paths:
        checker.profile(pprof, p)
    assert not checker.fig["callers_untrue"], checker.untrue[:10]
    print(f"{variant}: exact/samples per callback: "
          + ", ".join(f"{h} {exact[h]}/{n[h]}" for h in HOT)
          + f"; {on_g0} of them through runtime.systemstack")
