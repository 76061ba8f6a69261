"""JVMs and node processes killed while the full agent samples and reads
them (issue 19): the real profd, system-wide, BPF walkers
(bpf/unwind_hotspot.bpf.h, bpf/unwind_v8.bpf.h) and user space
(src/hotspot/, src/v8/) reading the processes' memory as they die.

20 short-lived processes, JVMs (tests/workloads/java/Frames.java: JIT
compiled code, threads) and node (test_v8_frames.py's code churn program)
alternating, two at a time, each killed with SIGKILL at a different point
of its life: while the runtime is detected and attached (its tables read
at startup), while its code is compiled, while it runs compiled code. profd
must keep running and exit 0 at the end of its --duration, print no error
or warning (what it could not read is counted, not printed), and every
profile it wrote must be one Google's pprof reads, with named frames of
the killed processes (the reads happened) and the counters in its
comments. Needs root.
"""
import glob
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ROOT, start, stop
from pprof_traces import comments, pprof_raw_samples
from test_v8_frames import CHURN_JS

NODE = shutil.which("node")
JAVA_DIR = os.path.join(ROOT, "tests", "workloads", "java")


def a_jdk():
    for d in sorted(glob.glob("/usr/lib/jvm/*")):
        if all(os.access(os.path.join(d, "bin", t), os.X_OK) for t in ("java", "javac")):
            return os.path.realpath(d)
    return None


JDK = a_jdk()
pytestmark = pytest.mark.skipif(JDK is None or NODE is None,
                                reason="needs a JDK under /usr/lib/jvm and node")
KILLED = 20
# profd's own lines on a run without trouble (anything else, an error or
# a warning, fails the test)
QUIET = ("profd: sampling ", "profd: interval ", "profd: done", "profd: duration")


def test_killed_mid_read_keeps_profd_running(profd_bin, pprof, tmp_path):
    classes = tmp_path / "classes"
    subprocess.run([os.path.join(JDK, "bin", "javac"), "-d", str(classes),
                    os.path.join(JAVA_DIR, "Frames.java")], check=True, timeout=180)
    script = tmp_path / "churn.js"
    script.write_text(CHURN_JS)
    out = tmp_path / "out"
    prof = subprocess.Popen([profd_bin, "--no-gpu", "--output-dir", str(out), "--duration", "40",
                             "--profile-interval", "5", "--sampling-frequency", "199"],
                            stderr=subprocess.PIPE, text=True)
    started, pids = [], {"java": set(), "node": set()}
    try:
        head = prof.stderr.readline()  # BPF loaded and attached: sampling
        assert head.startswith("profd: sampling"), head
        rnd = random.Random(19)
        for i in range(KILLED // 2):
            pair = []
            for kind in ("java", "node"):
                if kind == "java":
                    argv = [os.path.join(JDK, "bin", "java"), "-cp", str(classes),
                            "profd.frames.Frames"]
                else:
                    argv = [NODE, str(script), str(tmp_path / f"rep{i}.json"), "30", "gc"]
                p = start(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=dict(os.environ, PROFD_JAVA_SECS="30"))
                started.append(p)
                pids[kind].add(str(p.pid))
                # early (attach, tables read), compiling, running compiled code
                pair.append((p, (0.2, 0.6, 1.5, 2.5)[(i + len(pair)) % 4] + rnd.random() * 0.3))
            t0 = time.monotonic()
            for p, at in sorted(pair, key=lambda x: x[1]):
                time.sleep(max(0, at - (time.monotonic() - t0)))
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            assert prof.poll() is None, "profd stopped while processes were killed"
        _, err = prof.communicate(timeout=120)
    finally:
        for p in started:
            stop(p)
        if prof.poll() is None:
            prof.kill()
            prof.wait()
    assert prof.returncode == 0, err
    bad = [line for line in err.splitlines() if not line.startswith(QUIET)]
    assert not bad, bad
    profiles = sorted(out.glob("cpu-*.pb.gz"))
    assert len(profiles) >= 4, profiles
    named = {"java": 0, "node": 0}
    raw = ""
    for path in profiles:
        raw += comments(pprof, str(path))
        for s in pprof_raw_samples(pprof, str(path)):
            pid = s["labels"].get("pid")
            for kind, mapping in (("java", "[hotspot]"), ("node", "[v8]")):
                if pid in pids[kind] and any(f["mapping"] == mapping for f in s["frames"]):
                    named[kind] += s["value"]
    # the processes were read (named frames of them), and the profiles
    # carry the runtimes' counters
    assert named["java"] > 0 and named["node"] > 0, named
    assert "stat.hotspot_samples=" in raw and "stat.v8_samples=" in raw
