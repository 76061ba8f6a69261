"""Big binaries do not hold up the reader (issue 14 A).

Whole-machine profd, a burner run from a normal disk, then many distinct
copies of a big ELF object (libLLVM, ~100 MB each) loaded by small
helpers that spend CPU inside it: opening, parsing and detecting those
files happens on the object loader's thread (and their unwind tables on
the unwind loader's), so every interval is written on time with the
burner's samples in it, no interval holds more samples than the CPUs can
give (no backlog read late), /metrics answers within a second
throughout, and the big objects' frames are named in the end.
"""
import glob
import os
import shutil
import subprocess
import time

import pytest

from conftest import ROOT
from pprof_traces import pprof_traces
from test_metrics import Profd, get

WORKLOADS = os.path.join(ROOT, "tests", "workloads")
COPIES = 20
HZ = 99


def _big_library():
    for path in sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libLLVM-*.so.1")):
        if os.path.getsize(path) > (50 << 20):
            return path
    pytest.fail("a libLLVM-*.so.1 (llvm-dev) is needed for the big-object test")


def test_many_big_binaries_do_not_hold_up_the_reader(profd_bin, pprof, tmp_path):
    lib = _big_library()
    burner, helper = tmp_path / "burner", tmp_path / "bigelf"
    for src, exe, extra in (("burner.c", burner, []), ("bigelf.c", helper, ["-ldl"])):
        subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                        os.path.join(WORKLOADS, src), *extra], check=True)
    copies = []
    for i in range(COPIES):             # distinct inodes: each one opened and parsed
        dst = tmp_path / f"libbig{i}.so"
        shutil.copyfile(lib, dst)
        copies.append(dst)
    out = tmp_path / "out"
    out.mkdir()
    normal = subprocess.Popen([str(burner), "120000"])
    helpers = []
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "60",
               "--profile-interval", "1", "--sampling-frequency", str(HZ),
               "--http-address", "127.0.0.1:0"])
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://\S+)$", 30).group(1)
        deadline = time.monotonic() + 20
        while not glob.glob(str(out / "cpu-*.pb.gz")):
            assert time.monotonic() < deadline and p.proc.poll() is None, p.stderr()
            time.sleep(0.1)
        time.sleep(1.2)
        first_stress = set(glob.glob(str(out / "cpu-*.pb.gz")))
        t0 = time.monotonic()
        for c in copies:
            helpers.append(subprocess.Popen([str(helper), str(c), "3"],
                                            stdout=subprocess.DEVNULL))
        slowest = 0.0
        while time.monotonic() - t0 < 14:
            t = time.monotonic()
            status, _, body = get(url + "/metrics", timeout=5)
            slowest = max(slowest, time.monotonic() - t)
            assert status == 200, body
            time.sleep(0.3)
        assert slowest < 1.0, f"/metrics took {slowest:.2f} s during the load\n{p.stderr()}"
        assert p.stop() == 0, p.stderr()
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()
        for h in helpers + [normal]:
            h.kill()
            h.wait()

    paths = [f for f in sorted(glob.glob(str(out / "cpu-*.pb.gz"))) if f not in first_stress]
    # the intervals of the load: the last one is cut short by the stop
    assert len(paths) >= 13, (len(paths), p.stderr())
    # one interval's worth with slack (intervals run a little over 1 s): a
    # reader held up for half a second reads its backlog into one interval
    cap = os.cpu_count() * HZ * 1.5
    helper_pids = {str(h.pid) for h in helpers}
    big_named = 0
    totals = []
    for path in paths[:-1]:
        traces = pprof_traces(pprof, path)
        total = sum(s["value"] for s in traces)
        burner_samples = sum(s["value"] for s in traces
                             if s["labels"].get("pid") == str(normal.pid))
        totals.append((os.path.basename(path), total, burner_samples))
        big_named += sum(s["value"] for s in traces
                         if s["labels"].get("pid") in helper_pids and
                         any("llvm" in f.lower() for f in s["frames"]))
    print(totals)
    stamps = [time.mktime(time.strptime(n[4:19], "%Y%m%dT%H%M%S")) for n, _, _ in totals]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert max(gaps) <= 2, f"an interval written late: {totals}"
    assert all(b > 0 for _, _, b in totals), f"an interval without the burner: {totals}"
    assert all(t <= cap for _, t, _ in totals), f"more than 1 s of samples: {totals}"
    assert big_named > 0, "no frame of the big objects named"
