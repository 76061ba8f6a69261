"""The wall-clock view (--off-cpu): on-CPU + off-CPU time from the same stacks.

A program built -O2 -fomit-frame-pointer (tests/workloads/wall.c) runs one
thread that alternates a CPU spin (spin_outer -> spin_inner) and a sleep
(sleep_outer -> sleep_inner -> nanosleep) and measures its own time in
each: CPU time around the spins, CLOCK_MONOTONIC around the sleeps. Google
pprof reads the wall-*.pb.gz profiles: per chain, the wall/nanoseconds of
the stacks holding it are within 10% of the program's figure (every
switch recorded), the spin's all on-CPU, the sleep's all off-CPU, both on
the thread's own tid. With --off-cpu-threshold 0.5 the off-CPU part is
the recorded time x 2, exactly, and so again near the program's figure
while the offcpu profile (unscaled) holds about half. The flame graph has
a "Wall-clock" tab whose tree goes process -> thread -> frames.
"""
import json
import os
import re
import subprocess

import pytest

from pprof_traces import comments, pprof_traces
from test_output import dump_dom, parse_dom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "tests", "workloads", "wall.c")

SPIN = ["spin_inner", "spin_outer", "walker"]
SLEEP = ["sleep_inner", "sleep_outer", "walker"]


@pytest.fixture(scope="module")
def wall_bin(tmp_path_factory):
    out = tmp_path_factory.mktemp("wall")
    dst = str(out / "wall")
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-pthread", "-o", dst, SRC],
                   check=True)
    return dst


def run_exec(profd_bin, out, argv, *args, timeout=180):
    """profd exec --off-cpu over @argv: the program's figures and stderr."""
    p = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--off-cpu", "--sampling-frequency", "499",
                        "--profile-interval", "2", *args, "--", *argv],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return {k: int(v) for k, v in (line.split() for line in p.stdout.splitlines())}, p.stderr


def has_run(frames, chain):
    return any(frames[i:i + len(chain)] == chain
               for i in range(len(frames) - len(chain) + 1))


def chain_ns(pprof, paths, chain, index):
    """Sum of sample value @index of the samples holding @chain, and the
    set of (tid, thread_name) labels they carry."""
    total, threads = 0, set()
    for path in paths:
        for s in pprof_traces(pprof, path, f"-sample_index={index}", "-unit=ns"):
            if has_run(s["frames"], chain) and s["value"]:
                total += s["value"]
                threads.add((s["labels"].get("tid"), s["labels"].get("thread_name")))
    return total, threads


def flame_views(page):
    """{view name: {path tuple: value}} from the page's #fg-data JSON."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script id="fg-data" type="application/json">(.*?)</script>', text, re.S)
    data = json.loads(m.group(1))
    views = {}
    for v in data["views"]:
        nodes, names, tree, pos = v["nodes"], v["names"], {}, [0]

        def walk(prefix):
            i = pos[0]
            name, value, kind, nkids = nodes[4 * i:4 * i + 4]
            pos[0] += 1
            path = prefix + ((names[name], kind),)
            tree[path] = tree.get(path, 0) + value
            for _ in range(nkids):
                walk(path)

        if nodes:
            walk(())
        views[v["name"]] = tree
    return views


def test_wall_chains(profd_bin, pprof, wall_bin, tmp_path, chromium):
    out = tmp_path / "out"
    want, err = run_exec(profd_bin, out, [wall_bin, "4", "20", "20"],
                         "--off-cpu-threshold", "1")
    walls = sorted(str(x) for x in out.glob("wall-*.pb.gz"))
    assert walls, err
    spin, spin_threads = chain_ns(pprof, walls, SPIN, "wall")
    sleep, sleep_threads = chain_ns(pprof, walls, SLEEP, "wall")
    assert abs(spin - want["spin"]) <= 0.1 * want["spin"], (spin, want, err[-2000:])
    assert abs(sleep - want["sleep"]) <= 0.1 * want["sleep"], (sleep, want, err[-2000:])
    # the spin is on-CPU; the sleep off-CPU but for the few CPU samples
    # around the call (clock_gettime, the syscall); wall = cpu + off_cpu
    assert chain_ns(pprof, walls, SPIN, "cpu")[0] == spin
    assert chain_ns(pprof, walls, SPIN, "off_cpu")[0] == 0
    sleep_off = chain_ns(pprof, walls, SLEEP, "off_cpu")[0]
    assert sleep_off + chain_ns(pprof, walls, SLEEP, "cpu")[0] == sleep
    assert sleep_off >= 0.97 * sleep, (sleep_off, sleep)
    # one thread, "walker", holds both
    assert len(spin_threads) == 1 and spin_threads == sleep_threads, \
        (spin_threads, sleep_threads)
    tid, tname = spin_threads.pop()
    assert tname == "walker"
    assert any("wall = cpu (samples x 2004008 ns) + off_cpu (recorded blocked ns x 1 " in c
               for c in comments(pprof, walls[0]).splitlines())

    # the flame graph: a Wall-clock tab, process -> thread -> frames
    page = str(out / "flamegraph.html")
    views = flame_views(page)
    assert "Wall-clock" in views, list(views)
    tree = views["Wall-clock"]
    thread = (("all", 0), ("wall", 1), (f"walker [{tid}]", 7))
    assert thread in tree, [p for p in tree if len(p) == 3]
    under = {p[-1][0]: v for p, v in tree.items() if p[:3] == thread and len(p) > 3}
    assert abs(under["spin_outer"] - want["spin"]) <= 0.1 * want["spin"], (under, want)
    assert abs(under["sleep_outer"] - want["sleep"]) <= 0.1 * want["sleep"], (under, want)
    # the page shows that tab and, selected, the thread's frame
    names = [v for v in views]
    dom = parse_dom(dump_dom(chromium, page, tmp_path,
                             fragment=f"v={names.index('Wall-clock')}"))
    tabs = [a["_text"] for a in dom.tags if a.get("role") == "tab"]
    assert "Wall-clock" in tabs, tabs
    kinds = {f["data-name"]: f["data-kind"] for f in dom.frames}
    assert kinds.get(f"walker [{tid}]") == "thread", sorted(kinds)[:20]
    assert "hidden" not in dom.ids["lg-thread"], dom.ids["lg-thread"]
    assert "spin_outer" in kinds and "sleep_outer" in kinds, sorted(kinds)


def test_wall_scaled_by_threshold(profd_bin, pprof, wall_bin, tmp_path):
    """--off-cpu-threshold 0.5: about half the sleeps recorded, their
    time x 2 in the wall view."""
    out = tmp_path / "out"
    want, err = run_exec(profd_bin, out, [wall_bin, "5", "3", "10"],
                         "--off-cpu-threshold", "0.5")
    walls = sorted(str(x) for x in out.glob("wall-*.pb.gz"))
    offs = sorted(str(x) for x in out.glob("offcpu-*.pb.gz"))
    assert walls and offs, err
    assert want["sleeps"] >= 150, want
    recorded = chain_ns(pprof, offs, SLEEP, "off_cpu")[0]
    scaled = chain_ns(pprof, walls, SLEEP, "off_cpu")[0]
    # each stack's time x 2, rounded: exact up to 1 ns a sample
    assert abs(scaled - 2 * recorded) <= 1000, (scaled, recorded)
    assert chain_ns(pprof, walls, SLEEP, "wall")[0] == \
        scaled + chain_ns(pprof, walls, SLEEP, "cpu")[0]
    # p = 0.5 over >= 150 sleeps: the recorded share's sd is <= 4%
    w = want["sleep"]
    assert recorded <= 0.75 * w, (recorded, w)
    assert abs(scaled - w) <= 0.25 * w, (scaled, w, err[-2000:])
    assert any("x 2 = 1/off_cpu_threshold 0.5)" in c
               for c in comments(pprof, walls[0]).splitlines())
