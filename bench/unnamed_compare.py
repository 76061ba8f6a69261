#!/usr/bin/env python3
"""bench/unnamed_compare.py - profd's unnamed frames beside perf's, per object.

Usage: unnamed_compare.py PPROF PERF_SCRIPT PROFILE...

PERF_SCRIPT: the output of `perf script -F comm,ip,sym,dso` (each
callchain entry "ADDR SYM (DSO)", ADDR the object's file offset, as perf
prints it). PROFILE: profd's pprof files, read with Google's pprof
(`-raw`); a location's file offset is its address less its mapping's
start plus the mapping's offset. A frame is unnamed in profd when its
location has no function, in perf when its symbol is "[unknown]".

Prints, per object (by path; the 12 with most unnamed frames in
profd): frames and unnamed frames of each tool (profd's weighted by
samples, perf's one per callchain entry), and at the file offsets both
tools saw, how many profd frames (weighted) perf named and profd did
not ("perf-only") and the reverse; then the totals, and profd's unnamed
frames by kind: anonymous or JIT memory (no file), a file perf named
nothing of at the same offsets, and perf-only. The "perf-only" count is
the one that says profd misses a name that was there to find.
"""
import collections
import re
import subprocess
import sys

LOC = re.compile(r"^\s*(\d+): 0x([0-9a-f]+)(?: M=(\d+))? ?(.*)$")
MAP = re.compile(r"^(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S*)")
SAMPLE = re.compile(r"^\s+(\d+)\s+\d+: ([\d ]+)$")
PERF = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")


def profd_frames(pprof, files):
    """[(path, file_offset, named, weight)] of every frame of every sample."""
    frames = []
    for f in files:
        out = subprocess.run([pprof, "-raw", "-symbolize=none", f],
                             capture_output=True, text=True).stdout
        sec, maps, locs, samples = None, {}, {}, []
        for line in out.splitlines():
            if line.startswith(("Samples", "Locations", "Mappings")):
                sec = line[0]
                continue
            if sec == "S":
                m = SAMPLE.match(line)
                if m:
                    samples.append((int(m.group(1)), m.group(2).split()))
            elif sec == "L":
                m = LOC.match(line)
                if m:
                    locs[m.group(1)] = (int(m.group(2), 16), m.group(3), bool(m.group(4).strip()))
            elif sec == "M":
                m = MAP.match(line)
                if m:
                    maps[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5))
        for w, ids in samples:
            for i in ids:
                addr, mid, named = locs[i]
                start, off, path = maps.get(mid, (0, 0, "[none]"))
                frames.append((path or "[anon]", addr - start + off, named, w))
    return frames


def perf_frames(path):
    """[(dso, file_offset, named)] of every callchain entry."""
    frames = []
    with open(path, errors="replace") as fh:
        for line in fh:
            m = PERF.match(line)
            if m:
                frames.append((m.group(3), int(m.group(1), 16), m.group(2) != "[unknown]"))
    return frames


def anonymous(path):
    return not path.startswith("/") or path.startswith("/memfd:") or \
        re.match(r"/tmp/perf-\d+\.map$", path) is not None


def main():
    pprof, perf_script, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    pf = profd_frames(pprof, files)
    qf = perf_frames(perf_script)
    per = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # p_fr p_un q_fr q_un perf_only profd_only
    q_named = collections.defaultdict(set)
    q_unknown = collections.defaultdict(set)
    for dso, off, named in qf:
        per[dso][2] += 1
        per[dso][3] += not named
        (q_named if named else q_unknown)[dso].add(off)
    kinds = collections.Counter()
    for path, off, named, w in pf:
        per[path][0] += w
        per[path][1] += 0 if named else w
        if not named and off in q_named[path]:
            per[path][4] += w
        if named and off in q_unknown[path]:
            per[path][5] += w
        if not named:
            kinds["anonymous or JIT memory" if anonymous(path) else
                  "perf named it (same object, same offset)" if off in q_named[path] else
                  "perf left it [unknown] too" if off in q_unknown[path] else
                  "a file; perf saw no frame at that offset"] += w
    fmt = "%-58s %8s %8s %8s %8s %9s %10s"
    print(fmt % ("object", "profd_fr", "unnamed", "perf_fr", "unknown", "perf-only", "profd-only"))
    for path, v in sorted(per.items(), key=lambda kv: -kv[1][1])[:12]:
        print(fmt % ((path[-58:],) + tuple(v)))
    tot = [sum(v[i] for v in per.values()) for i in range(6)]
    print(fmt % (("all",) + tuple(tot)))
    print("profd's unnamed frames by kind (samples):")
    for k, n in kinds.most_common():
        print("  %8d  %5.2f %%  %s" % (n, 100.0 * n / max(tot[0], 1), k))


if __name__ == "__main__":
    main()
