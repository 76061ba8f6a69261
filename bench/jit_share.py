"""bench/jit_share.py - the counting of bench/jit_stacks.sh (issue 19):
the share of a process's samples whose stack is complete and named, in
profd's profiles (read with Google's pprof -raw, through
tests/pprof_traces.py) and in `perf script` output, per workload process
and per group of its threads.

  python3 jit_share.py profd PPROF LABEL=PID[,...] PROFILE...
  python3 jit_share.py perf MODE LABEL=PID[,...] PERF_SCRIPT_FILE

LABEL=PID: a workload (jvm=1234, node=5678). Each sample of PID counts for
the workload and for one of its thread groups (group_of below): "own" (the
workload's own threads: JvmBench's worker threads, node's main thread)
or "rt" (the runtime's other threads: JIT compilers, GC, VM thread, V8's
platform workers, libuv).

Definitions (a stack is read from the leaf to the root):
  complete  the root (outermost frame) is where a thread starts: _start,
            __libc_start_main, __libc_start_call_main's caller chain ends
            there (main thread), start_thread or clone3/clone (any thread
            created by pthread_create), thread_native_entry (HotSpot's
            threads, whose callers a walker may not show) or main (node's
            main, when libc's start frames above it are missing); and no
            frame says the walk stopped ([truncated], [hotspot: ...],
            [v8: ...]). main_pct counts the stacks that are complete or
            end at __libc_start_call_main, glibc's caller of main (perf's
            frame-pointer walk ends there: libc's outer frames keep none).
  named     every frame has a function name: none is mapping-only (a
            location without a function: pprof -traces prints it as
            [mapping], perf as [unknown]), [anon], <unknown>, a bare hex
            address, or a loss marker ([hotspot: ...], [v8: ...],
            [truncated]). The runtimes' own names of stubs and builtins
            ("[StubRoutines (1)]", Builtins_JSEntry) are names.
Output: one line per workload and group,
  "RESULT jit_share tool=T workload=W group=G samples=N complete_pct=
   named_pct= complete_named_pct= main_pct= frames_median=" and, for profd, the
  unnamed frames most seen ("# unnamed ..." lines) and the roots of
  incomplete stacks ("# root ..." lines).
"""
import os
import re
import statistics
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

MAIN_CALLER = "__libc_start_call_main"
ROOTS = {"_start", "__libc_start_main", "start_thread", "clone3", "clone",
         "thread_native_entry", "main"}
LOSS = re.compile(r"^\[(truncated|[a-z0-9_]+: .*)\]$")
UNNAMED = re.compile(r"^(\[anon\]|\[\[anon\]\]|\[unknown\]|<unknown>|(0x)?[0-9a-f]{6,})$")


def norm(fn):
    """A function name without argument list, version or libc's _impl."""
    fn = re.sub(r"\(.*$", "", fn) if not fn.startswith("[") else fn
    fn = re.sub(r"@.*$", "", fn)
    return "__libc_start_main" if fn.startswith("__libc_start_main") else fn


def group_of(workload, pid, tid, thread):
    if workload.startswith("jvm"):
        return "own" if thread in ("collections", "strings", "sorter") else "rt"
    return "own" if tid == pid else "rt"


class Tally:
    def __init__(self):
        self.n = self.complete = self.named = self.both = self.main = 0
        self.frames = []

    def add(self, v, complete, named, nframes, main):
        self.n += v
        self.main += v * (complete or main)
        self.complete += v * complete
        self.named += v * named
        self.both += v * (complete and named)
        self.frames += [nframes] * min(v, 50)

    def words(self):
        pct = lambda a: f"{100 * a / self.n:.1f}" if self.n else "nan"
        med = statistics.median(self.frames) if self.frames else "nan"
        return (f"samples={self.n} complete_pct={pct(self.complete)} named_pct={pct(self.named)}"
                f" complete_named_pct={pct(self.both)} main_pct={pct(self.main)} frames_median={med}")


def judge(names):
    """(complete, named) of a stack given as names, leaf first; None: unnamed."""
    loss = any(n is not None and LOSS.match(n) for n in names)
    named = all(n is not None and not UNNAMED.match(n) and not LOSS.match(n) for n in names)
    root = names[-1] if names else None
    complete = root is not None and norm(root) in ROOTS and not loss
    return complete, named


def report(tool, tallies, extra=""):
    for (w, g), t in sorted(tallies.items()):
        print(f"RESULT jit_share tool={tool} workload={w} group={g} {t.words()}{extra}")


def parse_targets(arg):
    out = {}
    for item in arg.split(","):
        label, pid = item.split("=")
        out[pid] = label
    return out


def profd_main(pprof, targets, profiles):
    from pprof_traces import pprof_raw_samples
    tallies, unnamed, roots = {}, Counter(), Counter()
    for p in profiles:
        for s in pprof_raw_samples(pprof, p):
            lab = s["labels"]
            w = targets.get(lab.get("pid"))
            if w is None:
                continue
            names = []
            for f in s["frames"]:
                fn = f["function"]
                names.append(fn)
                if fn is None or UNNAMED.match(fn) or LOSS.match(fn):
                    unnamed[(w, fn if fn is not None else "[" + f["mapping"] + "]")] += s["value"]
            complete, named = judge(names)
            if not complete:
                roots[(w, names[-1] if names else "-")] += s["value"]
            g = group_of(w, lab.get("pid"), lab.get("tid"), lab.get("thread_name", ""))
            for key in ((w, "all"), (w, g)):
                tallies.setdefault(key, Tally()).add(s["value"], complete, named, len(names),
                                                     bool(names) and names[-1] == MAIN_CALLER)
    report("profd", tallies)
    for (w, fn), v in unnamed.most_common(12):
        print(f"# unnamed workload={w} samples={v} frame={fn}")
    for (w, fn), v in roots.most_common(12):
        print(f"# root of incomplete workload={w} samples={v} frame={fn}")


HEAD = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)(?:\s+\((.*)\))?$")


def perf_main(mode, targets, path):
    tallies = {}
    unnamed, roots = Counter(), Counter()

    def flush(cur):
        if cur is None:
            return
        w, pid, tid, comm, names = cur
        complete, named = judge(names)
        if not complete:
            roots[(w, names[-1] if names else "-")] += 1
        g = group_of(w, pid, tid, comm)
        for key in ((w, "all"), (w, g)):
            tallies.setdefault(key, Tally()).add(1, complete, named, len(names),
                                                 bool(names) and names[-1] == MAIN_CALLER)

    cur = None
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line.strip():
                flush(cur)
                cur = None
                continue
            m = HEAD.match(line)
            if m and not line[0].isspace():
                flush(cur)
                w = targets.get(m.group(2))
                cur = None if w is None else (w, m.group(2), m.group(3), m.group(1), [])
                continue
            if cur is None:
                continue
            m = FRAME.match(line)
            if m:
                sym = re.sub(r"\+0x[0-9a-f]+$", "", m.group(2).strip())
                cur[4].append(sym)
                if UNNAMED.match(sym):
                    unnamed[(cur[0], m.group(3) or "?")] += 1
    flush(cur)
    report("perf", tallies, f" perf_mode={mode}")
    for (w, dso), v in unnamed.most_common(6):
        print(f"# perf_{mode} [unknown] frames workload={w} frames={v} dso={dso}")
    for (w, fn), v in roots.most_common(6):
        print(f"# perf_{mode} root of incomplete workload={w} samples={v} frame={fn}")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "profd":
        profd_main(sys.argv[2], parse_targets(sys.argv[3]), sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == "perf":
        perf_main(sys.argv[2], parse_targets(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)
