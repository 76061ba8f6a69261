"""HotSpot frames in profd's stacks (issue 19): the real profd (BPF walker
bpf/unwind_hotspot.bpf.h, naming in src/hotspot/hotspot.c) over real JVMs
(each JDK under /usr/lib/jvm with java and javac: Debian's openjdk-17 and
the JDK 25 there), read back with Google's pprof.

The oracle is the JVM itself: tests/workloads/java/Frames.java prints, at
each hot spot, every distinct stack Throwable.getStackTrace() gives there
(innermost first) with the thread's kernel tid. Each sample of that thread
in that hot spot must show its Java frames (mapping "[hotspot]", names
not in brackets: those are stubs) as a subsequence of one of those stacks
(a leaf in inlined code may show fewer of the inlined methods: a true
subsequence is allowed, a frame that is not there is not), from the innermost frame of
the spot's methods on (what they call, System.nanoTime, a class loaded,
the report itself, is no part of the JVM's stacks there), and most
must reach the stack's outermost method. Churn.java gives the code cache
churn: threads that each run only their own class's method, compiled
anew in classes loaded and unloaded all the time in a small code cache;
a frame of a thread named after another thread's class is misnamed.

Compiled code with and without frame pointers (-XX:+PreserveFramePointer
or not: the walker unwinds compiled frames by their frame size either
way); -Xint without. Each also with -XX:-UseCompressedOops, and compiled
code with a 16 MiB code cache (-XX:ReservedCodeCacheSize=16m: one code
heap, not segmented). Samples that reach the stack's outermost Java method
also reach the native frames below it (JavaCalls, the thread's start).
Needs root.
"""
import glob
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT
from pprof_traces import comments, pprof_raw_samples

JAVA_DIR = os.path.join(ROOT, "tests", "workloads", "java")
MAPPING = "[hotspot]"
FREQ = "199"


def jdks():
    seen, out = set(), []
    for d in sorted(glob.glob("/usr/lib/jvm/*")):
        real = os.path.realpath(d)
        if real in seen or not all(os.access(os.path.join(real, "bin", t), os.X_OK)
                                   for t in ("java", "javac")):
            continue
        seen.add(real)
        out.append(real)
    return out


JDKS = jdks()  # none: the tests are skipped (an empty parameter set)


@pytest.fixture
def classes(tmp_path):
    def build(jdk):
        out = tmp_path / ("classes-" + os.path.basename(jdk))
        if not out.exists():
            subprocess.run([os.path.join(jdk, "bin", "javac"), "-d", str(out),
                            os.path.join(JAVA_DIR, "Frames.java"),
                            os.path.join(JAVA_DIR, "Churn.java"),
                            os.path.join(JAVA_DIR, "Stubs.java")], check=True, timeout=180)
        return str(out)
    return build


def run_java(profd_bin, pprof, tmp_path, jdk, cp, main, *flags, secs=3):
    """`profd exec` of `java FLAGS -cp CP MAIN`: (the program's JSON lines,
    samples as pprof_raw_samples() gives them, profile comments)."""
    out = tmp_path / "out"
    env = dict(os.environ, PROFD_JAVA_SECS=str(secs))
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "-o", str(out), "--sampling-frequency",
                        FREQ, "--", os.path.join(jdk, "bin", "java"), *flags, "-cp", cp, main],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    reports = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    samples, raw = [], ""
    for p in sorted(out.glob("cpu-*.pb.gz")):
        samples += pprof_raw_samples(pprof, str(p))
        raw += comments(pprof, str(p))
    return reports, samples, raw


def java_frames(sample):
    """The sample's Java method frames, innermost first."""
    return [f["function"] for f in sample["frames"]
            if f["mapping"] == MAPPING and f["function"] and not f["function"].startswith("[")]


def is_subsequence(frames, stack):
    it = iter(stack)
    return all(any(f == s for s in it) for f in frames)


def counter(raw, name):
    for line in raw.splitlines():
        if line.strip().startswith(f"Comment: {name}="):
            return int(line.split("=")[1])
    return None


def check_spot(name, reports, samples, raw="", min_samples=20):
    """Every sample of spot @name agrees with a stack the JVM gave there.
    Returns how many there were."""
    mine = [r for r in reports if r["name"] == name]
    assert mine, f"the program never reported {name}"
    tid = str(mine[0]["tid"])
    stacks = [r["stack"] for r in mine]
    outermost = stacks[0][-1]
    spot = set(m for s in stacks for m in s[:-1])  # the spot's own methods
    ok = reached = native = 0
    bad, short = [], None
    for s in samples:
        if s["labels"].get("tid") != tid:
            continue
        jf = java_frames(s)
        if not spot & set(jf):
            continue  # another phase of the thread
        # from the spot's innermost method: what it calls (System.nanoTime,
        # a class loaded, the oracle's report()) is no part of its stacks
        k = 0
        while jf[k] not in spot:
            k += 1
        chain = jf[k:]
        if any(is_subsequence(chain, st) for st in stacks):
            ok += s["value"]
            if chain and chain[-1] == outermost:
                reached += s["value"]
                # and on below it, through the call stub into libjvm's code
                # that called Java, to the thread's start in libc (by
                # mapping: a loaded machine may leave symbols pending)
                maps = [os.path.basename(f["mapping"] or "") for f in s["frames"]]
                if "libjvm.so" in maps and maps[-1].startswith("libc.so"):
                    native += s["value"]
                else:
                    short = [(f["function"], f["mapping"]) for f in s["frames"]]
        else:
            bad.append(jf)
    assert not bad, f"{name}: {len(bad)} samples with frames the JVM did not show, e.g. " \
                    f"{bad[:3]}; the JVM's stacks: {stacks}"
    assert ok >= min_samples, f"{name}: {ok} samples; " + " ".join(
        line.split()[-1] for line in raw.splitlines() if "hotspot" in line and "=0" not in line)
    assert reached >= 0.8 * ok, f"{name}: {reached} of {ok} samples reach {outermost}"
    assert native >= 0.8 * reached, \
        f"{name}: {native} of {reached} reach the thread's start, e.g. not {short}"
    return ok


FP_MODES = {"frame-pointers": ("-XX:+PreserveFramePointer",), "no-frame-pointers": ()}
# the heap and code cache laid out otherwise: 64-bit oops (no narrow oop
# base or shift), one code heap of 16 MiB (no segmented code cache)
VM_MODES = {"default": (), "no-compressed-oops": ("-XX:-UseCompressedOops",),
            "code-cache-16m": ("-XX:ReservedCodeCacheSize=16m",)}


@pytest.mark.parametrize("vm", VM_MODES)
@pytest.mark.parametrize("fp", FP_MODES)
@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_compiled_and_interpreted_frames(profd_bin, pprof, tmp_path, classes, jdk, fp, vm):
    reports, samples, raw = run_java(profd_bin, pprof, tmp_path, jdk, classes(jdk),
                                     "profd.frames.Frames", *FP_MODES[fp], *VM_MODES[vm])
    for spot in ("hot", "worker", "sort"):
        check_spot(spot, reports, samples, raw)
    # the hot leaf is C2 code by then, the comparator is called from
    # compiled TimSort, main stays interpreted: all of them named
    names = {f for s in samples for f in java_frames(s)}
    for want in ("profd.frames.Frames.hotMiddle", "profd.frames.Frames$SlowCmp.compare",
                 "java.util.TimSort.sort", "profd.frames.Frames.main",
                 "profd.frames.Frames$Worker.workB"):
        assert want in names, sorted(names)
    assert counter(raw, "stat.hotspot_samples") > 0


@pytest.mark.parametrize("vm", ["default", "no-compressed-oops"])
@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_interpreted_only(profd_bin, pprof, tmp_path, classes, jdk, vm):
    """-Xint: every Java frame interpreted (named from its Method*, with the
    line of its bci)."""
    reports, samples, raw = run_java(profd_bin, pprof, tmp_path, jdk, classes(jdk),
                                     "profd.frames.Frames", "-Xint", *VM_MODES[vm])
    for spot in ("hot", "worker", "sort"):
        check_spot(spot, reports, samples, raw)
    # interpreted, nothing is inlined: the whole chain shows, each caller
    # at the line of its call, as the JVM says (the bci's line in the
    # method's line number table)
    hot = [r for r in reports if r["name"] == "hot"][0]
    full = [s for s in samples if java_frames(s)[:5] == hot["stack"]]
    assert sum(s["value"] for s in full) >= 20, full
    for s in full:
        lines = [f["line"] for f in s["frames"] if f["mapping"] == MAPPING and
                 f["function"] and not f["function"].startswith("[")][:5]
        assert lines[1:] == hot["lines"][1:], (lines, hot["lines"])
        assert lines[0] > 0


@pytest.mark.parametrize("fp", FP_MODES)
@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_code_cache_churn_never_misnamed(profd_bin, pprof, tmp_path, classes, jdk, fp):
    reports, samples, raw = run_java(profd_bin, pprof, tmp_path, jdk, classes(jdk),
                                     "profd.frames.Churn", *FP_MODES[fp],
                                     "-XX:ReservedCodeCacheSize=4m", secs=5)
    own = {str(r["tid"]): r["cls"] + ".work" for r in reports if r["name"] == "churn"}
    assert len(own) == 4, reports
    payloads = {cls for cls in own.values()}
    named = 0
    for s in samples:
        tid = s["labels"].get("tid")
        if tid not in own:
            continue
        for f in java_frames(s):
            if f in payloads:
                assert f == own[tid], f"thread {tid} runs {own[tid]}, a frame says {f}"
                named += s["value"]
    assert named >= 50, named


def inlining_log(path):
    """The JVM's -XX:+PrintInlining decisions in log @path:
    {"pkg.Class.method": {"inline (hot)", "too big", ...}}."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"@ \d+\s+(\S+)::(\S+) \(\d+ bytes\)\s+(.*)$", line)
            if m:
                out.setdefault(m.group(1) + "." + m.group(2), set()).add(m.group(3).strip())
    return out


def java_lines(sample):
    """(function, file, line) of the sample's Java method frames, innermost first."""
    return [(f["function"], f["file"], f["line"]) for f in sample["frames"]
            if f["mapping"] == MAPPING and f["function"] and not f["function"].startswith("[")]


INLINE_MODES = {"default": (), "debug-non-safepoints": ("-XX:+DebugNonSafepoints",)}


@pytest.mark.parametrize("mode", INLINE_MODES)
@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_inlined_frames(profd_bin, pprof, tmp_path, jdk, mode):
    """Methods C2 inlined show as frames of their own, each with its file
    and line, as the JVM's own stack trace shows them
    (tests/workloads/java/Inline.java). 'call': the leaf (never inlined) is
    called from code where two methods are inlined: its caller's frame, at
    the call's return address, expands to exactly the JVM's chain, each at
    the line of its call, with or without flags. 'leaf': the hot loop is
    inlined code; a leaf pc shows the inlined frames the JVM's debug points
    before and after it agree on: with -XX:+DebugNonSafepoints (a point
    after every instruction) the whole chain, without (points at
    safepoints only) often fewer frames; never one the JVM did not show."""
    cp = tmp_path / "inline-classes"
    subprocess.run([os.path.join(jdk, "bin", "javac"), "-d", str(cp),
                    os.path.join(JAVA_DIR, "Inline.java")], check=True, timeout=180)
    log = tmp_path / "inlining.log"
    reports, samples, raw = run_java(
        profd_bin, pprof, tmp_path, jdk, str(cp), "profd.frames.Inline",
        "-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintCompilation", "-XX:+PrintInlining",
        "-XX:+LogVMOutput", f"-XX:LogFile={log}", "-XX:-DisplayVMOutput",
        "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,profd.frames.Inline::spin",
        "-XX:CompileCommand=dontinline,profd.frames.Inline::report", *INLINE_MODES[mode],
        secs=4)
    # the JVM says it inlined them (C2's "inline (hot)")
    inl = inlining_log(log)
    for m in ("callMiddle", "callInner", "leafMiddle", "leafInner"):
        assert "inline (hot)" in inl.get("profd.frames.Inline." + m, ()), (m, inl)
    # and spin never (its "disallowed by CompileCommand" line may be missing
    # from a log the JVM had not flushed yet when it was stopped)
    assert not any("inline (hot)" in d for d in inl.get("profd.frames.Inline.spin", ())), inl

    # no frame the JVM did not show, and the stacks reach main and below
    for spot in ("call", "leaf"):
        check_spot(spot, reports, samples, raw)
    tid = str(reports[0]["tid"])
    spots = {"call": ("profd.frames.Inline.spin", 0.8),
             "leaf": ("profd.frames.Inline.leafInner", 0.8)}
    if mode == "default":
        del spots["leaf"]  # how many depends on where C2 put its safepoints
    for spot, (leaf, share) in spots.items():
        jvm = [r for r in reports if r["name"] == spot][0]
        want, want_lines = jvm["stack"], jvm["lines"]
        mine = [s for s in samples if s["labels"].get("tid") == tid and
                set(java_frames(s)) & set(want[:-1])]
        full = [s for s in mine if java_frames(s)[:len(want)] == want]
        n, nfull = sum(s["value"] for s in mine), sum(s["value"] for s in full)
        assert n >= 50, (spot, n, counter(raw, "partial.hotspot_inline_unread"))
        assert nfull >= share * n, \
            (spot, nfull, n, [java_frames(s) for s in mine if s not in full][:5])
        for s in full:
            fr = java_lines(s)[:len(want)]
            # callers at the lines of their calls, as the JVM says
            assert [f[2] for f in fr[1:]] == want_lines[1:], (spot, fr, want_lines)
            # the leaf's line, where the debug points agree on it: in the
            # spot's body (the line before the JVM's report call to the
            # loop after it: Inline.java)
            assert fr[0][2] == 0 or want_lines[0] - 1 <= fr[0][2] <= want_lines[0] + 3, fr
            assert all(f[1] == "Inline.java" for f in fr), fr


@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_leaf_in_stub_routines(profd_bin, pprof, tmp_path, classes, jdk):
    """A hot leaf in a StubRoutines stub (the jlong arraycopy stub C2 calls
    from copyLeaf: no frame size, no frame of its own at its entry and
    ret): its samples go on to the compiled caller and its chain, as
    the JVM's own stack trace at the call shows."""
    reports, samples, raw = run_java(profd_bin, pprof, tmp_path, jdk, classes(jdk),
                                     "profd.frames.Stubs", secs=5)
    tid = str([r for r in reports if r["name"] == "copy"][0]["tid"])
    in_stub = [s for s in samples if s["labels"].get("tid") == tid and s["frames"] and
               (s["frames"][0]["function"] or "").startswith("[StubRoutines")]
    total = sum(s["value"] for s in in_stub)
    assert total >= 20, f"{total} samples in a stub; " + " ".join(
        line.split()[-1] for line in raw.splitlines() if "hotspot" in line and "=0" not in line)
    # every one of them agrees with the JVM's stack; most reach main
    check_spot("copy", reports, in_stub, raw, min_samples=int(0.8 * total))


@pytest.mark.parametrize("jdk", JDKS, ids=os.path.basename)
def test_native_method_interpreted(profd_bin, pprof, tmp_path, classes, jdk):
    """A native method called from the interpreter (System.arraycopy under
    -Xint) has an interpreter frame whose bcp slot holds 0: it is named,
    between the JVM's C++ frames and its interpreted caller, as the JVM's
    own stack trace names it ("Native Method"), not dropped as a bad
    interpreted frame (before: every such sample, [anon] in its place)."""
    reports, samples, raw = run_java(profd_bin, pprof, tmp_path, jdk, classes(jdk),
                                     "profd.frames.Stubs", "-Xint", secs=4)
    tid = str([r for r in reports if r["name"] == "copy"][0]["tid"])
    copying = named = 0
    for s in samples:
        if s["labels"].get("tid") != tid:
            continue
        jf = java_frames(s)
        if "profd.frames.Stubs.copyLeaf" not in jf or jf[0] == "profd.frames.Stubs.copyLeaf" and \
                not any("opy" in (f["function"] or "") for f in s["frames"][:4]):
            continue  # not in the copy (report(), a class load)
        copying += s["value"]
        k = jf.index("profd.frames.Stubs.copyLeaf")
        if k and jf[k - 1] == "java.lang.System.arraycopy":
            named += s["value"]
    bad = counter(raw, "partial.hotspot_bad_interpreted")
    assert copying >= 50, f"{copying} samples copying"
    assert named >= 0.9 * copying, f"{named} of {copying} named; bad_interpreted={bad}"
