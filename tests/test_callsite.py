"""The x86-64 call-site decoder (src/unwind/callsite.c) on real code:
tests/unit/test_callsite.c's encodings, then every near call objdump finds
in real binaries of this machine must verify at its end address, and the
ends of the other instructions mostly must not (the false-accept rate is
printed). Then the real profd over tests/workloads/fakeframe.c, whose
frame pointer leads to a comment's bytes, data and code not after a call:
none of them may show up as a caller (needs root, like profd)."""
import os
import re
import subprocess
import time

import pytest

from conftest import ROOT, unit_program
from pprof_traces import comments

BINARIES = [
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib64/ld-linux-x86-64.so.2",
    "/usr/bin/python3.11",
    "/usr/bin/xz",
]
PREFIXES = {"bnd", "notrack", "data16", "addr32", "cs", "ds", "es", "ss",
            "fs", "gs", "lock", "rep", "repz", "repnz", "repe", "repne"}


def exec_sections(path):
    """[(vma, size, file offset)] of the executable (CODE) sections."""
    out = subprocess.run(["objdump", "-h", "-w", path], capture_output=True,
                         text=True, check=True).stdout
    secs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 7 and f[0].isdigit() and "CODE" in line:
            secs.append((int(f[3], 16), int(f[2], 16), int(f[5], 16)))
    return secs


def sites(path):
    """The list file's lines (see test_callsite.c) from `objdump -d -w`."""
    secs = exec_sections(path)
    lines = [f"x {vma:x} {vma + size:x}" for vma, size, _ in secs]
    out = subprocess.run(["objdump", "-d", "-w", path], capture_output=True,
                         text=True, check=True).stdout
    insn = re.compile(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*\t(.*)$")
    ncalls = 0
    for line in out.splitlines():
        m = insn.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        end = addr + len(m.group(2).split())
        words = m.group(3).split()
        while words and (words[0] in PREFIXES or words[0].startswith("rex")):
            words = words[1:]
        if not words or words[0].startswith("(bad)"):
            continue
        mnem = words[0]
        if mnem in ("lcall", "ljmp") or "far" in m.group(3):
            continue
        sec = next((s for s in secs if s[0] <= addr < s[0] + s[1]), None)
        if not sec:
            continue
        off = end - sec[0] + sec[2]
        kind = "c" if mnem in ("call", "callq") else "n"
        ncalls += kind == "c"
        lines.append(f"{kind} {end:x} {off:x}")
    return lines, ncalls


def test_unit_callsite_encodings():
    """Each call encoding verifies; far calls, jumps, data do not; and
    callsite_verify() on the unit program itself (memory and file reads)."""
    r = subprocess.run([unit_program("test_callsite")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and "all passed" in r.stdout, r.stdout


@pytest.mark.parametrize("path", BINARIES, ids=os.path.basename)
def test_real_call_sites(path, tmp_path):
    """Every near call's end in @path verifies; the false-accept rate of
    other instruction ends is printed and must stay a minority."""
    if not os.path.exists(path):
        pytest.skip(f"{path} not installed")
    unit = unit_program("test_callsite")
    lines, ncalls = sites(path)
    assert ncalls > 100, f"objdump found only {ncalls} calls in {path}"
    lst = tmp_path / "sites"
    lst.write_text("\n".join(lines) + "\n")
    r = subprocess.run([unit, path, str(lst)], capture_output=True, text=True,
                       timeout=300)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"calls (\d+) rejected (\d+)", r.stdout)
    assert m and int(m.group(1)) == ncalls and m.group(2) == "0", r.stdout
    m = re.search(r"noncalls (\d+) accepted (\d+)", r.stdout)
    assert m and int(m.group(1)) > 0
    rate = int(m.group(2)) / int(m.group(1))
    assert rate < 0.10, f"false accepts {rate:.1%}"


# --- profd over a workload whose frame pointer leads to untrue frames --------

FAKE_THREADS = ("fake-comment", "fake-data", "fake-code")


@pytest.fixture(scope="module")
def fakeframe(tmp_path_factory):
    """tests/workloads/fakeframe.c built without unwind tables."""
    dst = str(tmp_path_factory.mktemp("fakeframe") / "fakeframe")
    subprocess.run(["gcc", "-O2", "-Wall", "-fno-asynchronous-unwind-tables",
                    "-fno-unwind-tables", "-fomit-frame-pointer", "-pthread", "-o", dst,
                    os.path.join(ROOT, "tests", "workloads", "fakeframe.c")], check=True)
    return dst


@pytest.mark.parametrize("walker", ["fp", "dwarf"])
def test_untrue_callers_end_the_stack(profd_bin, pprof, fakeframe, tmp_path, walker):
    """A leaf whose frame pointer leads to a comment's bytes
    (0x2a2a2a2a2a2a2a2a), a data buffer or code not after a call: no
    sample shows any of them as a caller; the stacks end after spin_fake
    in [truncated], counted in partial.unwind_unverified_caller (profile
    comments, exit line) and flagged in --debug-pid output. Under the
    frame-pointer walker (--no-dwarf-unwinding) every fake caller reaches
    user space; under the DWARF one, frames outside executable code are
    dropped in BPF already and the code address is what is left to cut."""
    from test_dwarf import finish_profd, start_profd
    from test_profd import samples_of

    work = subprocess.Popen([fakeframe, "30"])
    try:
        time.sleep(0.4)
        args = ["--pid", str(work.pid), "--no-gpu", "--duration", "3",
                "--debug-pid", str(work.pid)]
        if walker == "fp":
            args.append("--no-dwarf-unwinding")
        prof, head = start_profd(profd_bin, tmp_path, *args)
        rc, err, paths = finish_profd(prof, head, tmp_path)
    finally:
        work.kill()
        work.wait()
    assert rc == 0 and paths, err
    samples = samples_of(pprof, paths, lambda l: l.get("pid") == str(work.pid))
    seen = {t: 0 for t in FAKE_THREADS}
    cut = {t: 0 for t in FAKE_THREADS}
    for s in samples:
        t = s["labels"].get("thread_name")
        if t not in seen:
            continue
        frames = s["frames"]
        assert not any("2a2a2a2a" in f or "fake_ra_code" in f or "data_buffer" in f
                       for f in frames), f"an untrue caller in {t}: {frames}"
        i = frames.index("spin_fake")   # kernel frames may come before it
        assert frames[i + 1:] in ([], ["[truncated]"]), f"{t}: {frames}"
        seen[t] += s["value"]
        cut[t] += s["value"] if frames[i + 1:] else 0
    print(walker, "samples", seen, "cut", cut)
    assert all(seen.values()), f"threads not sampled: {seen}\n{err}"
    must_cut = FAKE_THREADS if walker == "fp" else ("fake-code",)
    for t in must_cut:
        assert cut[t] >= 0.9 * seen[t], f"{t}: {cut[t]}/{seen[t]} cut\n{err}"
    m = re.search(r"partial\.unwind_unverified_caller=(\d+)", comments(pprof, paths[-1]))
    assert m and int(m.group(1)) > 0, "counter missing from the profile comments"
    assert re.search(r"unwind_unverified_caller=\d+", err), err[-3000:]
    assert re.search(r"profd: debug: sample pid=%d .*flags=[^ ]*unverified_caller"
                     % work.pid, err), "no debug line flags the cut"


def test_whole_system_no_untrue_callers(profd_bin, pprof, fakeframe, tmp_path):
    """profd system-wide (--no-gpu, 5 s) while gcc, xz, python3, perl and
    sqlite3 work (and fakeframe, whose fake callers must be cut): every
    caller of every stack is checked on the mapped file by
    tests/untrue_frames.py, its own decoder, not profd's. None may be
    untrue; thousands are checked."""
    from untrue_frames import Checker, run

    rc, err, paths, names = run(profd_bin, str(tmp_path), 5, ROOT, extra=[[fakeframe, "60"]])
    assert rc == 0 and paths, err
    c = Checker()
    for p in paths:
        c.profile(pprof, p)
    print("programs:", names, "figures:", dict(c.fig))
    for path, n in c.unreadable.most_common(5):
        print(f"unreadable: {path} x{n}")
    assert {"gcc", "xz", "python3", "perl"} <= set(names), names
    assert c.fig["callers_true"] > 1000, dict(c.fig)
    assert c.fig["callers_untrue"] == 0, "\n".join(c.untrue[:40])
