"""A forked child is named through its parent's mappings (the fork record).

A parent forks children that live ~3 ms without exec (tests/workloads/
fork_children.c: main -> spawn -> child_work -> child_leaf, then _exit):
each is gone long before profd's reader reads /proc/CHILD/maps. Real
`profd exec` runs, the profiles read with Google's pprof:

- fork only: of the children's samples (pid label != the parent's), at
  least 90 % name child_leaf under child_work, spawn, main; few have an
  unnamed user leaf; stat.maps_inherited_from_parent counted it.
- fork + exec: each child spins in child_work, then execs
  fork_exec_target (exec_target_leaf): no child sample whose leaf is in
  the new image is named with the parent's child_* functions (never the
  parent's view after the exec), and its pre-exec samples still are.
Root (BPF).
"""
import collections
import os
import re
import subprocess

import pytest

from conftest import ROOT
from pprof_traces import comments, pprof_raw_samples, pprof_traces

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

CHAIN = ["child_leaf", "child_work", "spawn", "main"]
# a child's frames in fork_children's file before its exec, leaf first
TRUE_PRE_EXEC = ["spawn", "main", "_start"]
HEX = re.compile(r"^0x[0-9a-f]+$|^<unknown>$|^\?\?$")


def build(tmp, name):
    exe = str(tmp / name)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", exe,
                    os.path.join(ROOT, "tests", "workloads", name + ".c")], check=True)
    return exe


def run(profd_bin, tmp, argv):
    """profd exec over @argv; (samples, counters, stderr, parent pid)."""
    out = tmp / "out"
    out.mkdir()
    p = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--sampling-frequency", "499", "--", *argv],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    paths = sorted(str(x) for x in out.glob("cpu-*.pb.gz"))
    assert paths, p.stderr[-3000:]
    return paths, p.stderr


def read(pprof, paths):
    samples = [s for f in paths for s in pprof_traces(pprof, f)]
    c = collections.Counter()
    for f in paths:
        for line in comments(pprof, f).splitlines():
            k, _, v = line.strip().removeprefix("Comment:").strip().partition("=")
            if v.isdigit():
                c[k] += int(v)
    return samples, c


def user_frames(frames):
    """@frames below the kernel's (pprof names them with a [kernel...] mapping
    suffix only with -symbolize=none when known: strip leading ones that
    are kernel functions by their profile mapping)."""
    return [f for f in frames if not f.endswith("[kernel.kallsyms]")]


def chain(frames):
    """child_leaf named, under child_work, spawn, main."""
    return "child_leaf" in frames and frames[frames.index("child_leaf"):][:4] == CHAIN


def children(samples, parent):
    return [s for s in samples if s["labels"].get("pid") not in (None, str(parent))]


def test_fork_children_named(profd_bin, pprof, tmp_path):
    exe = build(tmp_path, "fork_children")
    pidfile = tmp_path / "pid"
    paths, err = run(profd_bin, tmp_path, [exe, "4", "3", str(pidfile)])
    parent = int(pidfile.read_text())
    samples, c = read(pprof, paths)
    kids = children(samples, parent)
    total = sum(s["value"] for s in kids)
    named = sum(s["value"] for s in kids if chain(s["frames"]))
    unnamed = sum(s["value"] for s in kids if any(HEX.match(f) for f in s["frames"]))
    msg = (f"children's samples {total}, child_leaf chain {named}, unnamed {unnamed}; "
           f"maps_read_error {c['partial.maps_read_error']}, "
           f"inherited {c['stat.maps_inherited_from_parent']}, "
           f"exited_unidentified {c['lost.exited_unidentified']}\n"
           f"{collections.Counter(';'.join(s['frames'][:6]) for s in kids).most_common(6)}")
    print(msg)
    assert total >= 100, msg
    assert named >= 0.9 * total, msg
    assert unnamed <= 0.03 * total, msg
    assert c["stat.maps_inherited_from_parent"] > 0, msg
    # labels: the child's pid, the parent's executable (no exec happened)
    exes = collections.Counter(s["labels"].get("executable") for s in kids)
    assert set(exes) == {"fork_children"}, exes


def test_fork_exec_never_parent_names(profd_bin, pprof, tmp_path):
    """Children exec fork_exec_target at once, without address space
    randomization (setarch -R): the new image lies where the parent's
    does, so a view of the parent's mappings used after the exec would
    name the new image's code by the parent's file. Before its exec a
    child runs only spawn (fork's return, execl) under main and _start of
    the parent's file: any other frame of that file in a child's sample,
    child_work and child_leaf above all, is misnamed."""
    exe = build(tmp_path, "fork_children")
    target = build(tmp_path, "fork_exec_target")
    pidfile = tmp_path / "pid"
    paths, err = run(profd_bin, tmp_path,
                     ["setarch", "-R", exe, "4", "1", str(pidfile), target])
    parent = int(pidfile.read_text())
    c = read(pprof, paths)[1]
    kids = [s for f in paths for s in pprof_raw_samples(pprof, f)
            if s["labels"].get("pid") not in (None, str(parent))]
    after, misnamed = 0, []
    for s in kids:
        names = [f["function"] for f in s["frames"]]
        mine = [f["function"] for f in s["frames"]
                if os.path.basename(f["mapping"]) == "fork_children"]
        after += s["value"] if "exec_target_leaf" in names else 0
        if mine != TRUE_PRE_EXEC[:len(mine)]:   # a cut stack: a prefix
            misnamed.append(s)
    shown = [[(f["function"], os.path.basename(f["mapping"])) for f in s["frames"]]
             for s in misnamed[:3]]
    msg = (f"children's samples {sum(s['value'] for s in kids)}, in exec_target_leaf "
           f"{after}, misnamed {sum(s['value'] for s in misnamed)}; "
           f"inherited {c['stat.maps_inherited_from_parent']}, "
           f"maps_read_error {c['partial.maps_read_error']}\n"
           f"{shown}")
    print(msg)
    assert after >= 100, msg
    assert not misnamed, msg
