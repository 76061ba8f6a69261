"""DWARF shed and read again in a loop (issue 18's CPU figure): a
working set of DWARF about twice what the symbolizer's budget holds must
not cost a DWARF read per process start.

Four -O2 -g binaries, each with ~4.6 MiB of DWARF (thousands of struct
types kept with -fno-eliminate-unused-debug-types: .debug_info and
.debug_str, read whole by the symbolizer), run in turn, 3 s each, as
new processes, for 48 s under `profd exec` with --memory-limit 100 (no
lines part: DWARF at most half of an 11.2 MiB symbol budget) and 1 s
intervals (an exited process lets go of its objects at the next one).
Two fit, not three: each start pushes out the object of one that
exited (idle, dropped whole). Before, that object was opened again at
its next start and its DWARF read again: 17 DWARF reads in 48 s
(stat.lines_read), one per start. Now a file whose DWARF was freed for the budget
while DWARF held more than its part is not read again for 30 s,
doubling each time it is freed again (partial.lines_backoff): the reads
stay a small multiple of the objects.

Needs root, like profd itself. About a minute.
"""
import glob
import re
import subprocess

from pprof_traces import comments, pprof_raw_samples
from test_memory import _status_mib
from test_metrics import Profd
from test_symbol_budget import SPIN_C

LIMIT_MIB = 100
SECONDS = 48
RUN_S = 3
NAMES = ("a", "b", "c", "d")
STRUCTS, FIELDS = 4000, 40


def _debug_mib(path):
    """Bytes of the .debug_* sections profd reads (MiB)."""
    sh = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True,
                        text=True).stdout
    return sum(int(m.group(2), 16) for m in re.finditer(
        r"\.debug_(info|abbrev|line|line_str|str|str_offsets|addr|rnglists)\s+\S+\s+\S+\s+\S+\s+(\S+)",
        sh)) / (1 << 20)


def _build(d, tag):
    src = d / f"{tag}.c"
    types = "".join(f"struct {tag}_type_{i} {{ " +
                    " ".join(f"long {tag}_field_{i}_{j};" for j in range(FIELDS)) + " };\n"
                    for i in range(STRUCTS))
    src.write_text(types + SPIN_C.replace("NAME", f"{tag}_spin"))
    exe = str(d / tag)
    subprocess.run(["gcc", "-O2", "-g", "-fno-eliminate-unused-debug-types",
                    "-fno-omit-frame-pointer", "-o", exe, str(src)], check=True)
    return exe


def _stat(text, kind, name):
    return sum(int(n) for n in re.findall(rf"{kind}\.{name}=(\d+)", text))


def test_dwarf_not_read_in_a_loop(profd_bin, pprof, tmp_path):
    exes = [_build(tmp_path, t) for t in NAMES]
    mib = [_debug_mib(e) for e in exes]
    # each fits the DWARF part (5.6 MiB), two the budget, not three
    assert all(4 < m < 7 for m in mib), mib
    loop = (f"end=$(($(date +%s) + {SECONDS})); while [ $(date +%s) -lt $end ]; do " +
            " ".join(f"{e} {RUN_S};" for e in exes) + " done")
    out = tmp_path / "out"
    p = Profd([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
               "--profile-interval", "1", "--sampling-frequency", "99",
               "--memory-limit", str(LIMIT_MIB), "--", "sh", "-c", loop])
    hwm = 0
    try:
        p.wait_line(r"sampling", 30)
        hwm = _status_mib(p.proc.pid, "VmHWM")
        rc = p.proc.wait(SECONDS + 60)
    finally:
        p.stop()
    assert rc == 0, p.stderr()
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    assert len(paths) >= SECONDS // 2, p.stderr()
    text = "".join(comments(pprof, path) for path in paths)
    reads = _stat(text, "stat", "lines_read")
    rereads = _stat(text, "stat", "lines_reread")
    backoff = _stat(text, "partial", "lines_backoff")
    shed = _stat(text, "partial", "lines_shed")
    lined = {e: [0, 0] for e in exes}    # [samples with a line, all] in *_spin
    for path in paths:
        for s in pprof_raw_samples(pprof, path):
            for f in s["frames"]:
                if f["mapping"] in lined and (f["function"] or "").endswith("_spin"):
                    lined[f["mapping"]][1] += s["value"]
                    lined[f["mapping"]][0] += s["value"] * bool(f["line"] > 0 and f["file"])
    print(f"DWARF MiB {mib}; stat.lines_read {reads}, lines_reread {rereads}; "
          f"partial.lines_shed {shed}, lines_backoff {backoff}; *_spin frames "
          f"samples [with a line, all] {list(lined.values())}; VmHWM {hwm:.1f} MiB")
    # the loop really ran and was sampled: every binary's frames named
    assert all(n > 20 for _, n in lined.values()), lined
    # bounded: each binary read at most twice in 48 s (its first read,
    # then once 30 s after it was freed), plus ld.so's and libc's debug
    # files; before: at every start of a binary whose object was dropped
    assert reads <= 2 * len(exes) + 2, (reads, rereads)
    # the binaries whose DWARF stayed keep their lines
    assert sum(w for w, _ in lined.values()) > 20, lined
