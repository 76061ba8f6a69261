"""Unwind-table eviction and reload, and profd's memory under churn
(issue 14 B and G): the real profd, whole machine, real workloads.

B: a no-frame-pointer program keeps complete stacks while copies of a
big system library (libLLVM, each copy its own inode) pass through
under a small --unwind-memory-limit: its table may be evicted for
theirs (BPF counts dwarf_table_evicted, not a read error) but comes
back once it is sampled again (unwind_reloads), and eviction takes the
least recently sampled table first.

G: 100 distinct big binaries run briefly under profd with a small
--symbol-cache-limit, 60 under an exec storm with --memory-limit 80, and
8 at once for 14 s: RSS stays under the budget plus the documented base
(the limit), each cache within its share (the symbol tables of files
live processes map included: shed, then read back when sampled),
shedding is counted, frames are still named.

Needs root, like profd itself. About 2 minutes.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from pprof_traces import comments
from test_dwarf import CHAIN, dwarf_build, explain, finish_profd, is_stack, of_pid, \
    start_profd  # noqa: F401 (fixture)
from test_profd import share

LLVM = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libLLVM-1[0-9].so.1"))


def stat(pprof, paths, name):
    """The sum of profd's `NAME=N` comment counters (stat./partial./lost.)
    over @paths."""
    total = 0
    for p in paths:
        for l in comments(pprof, p).splitlines():
            m = re.search(rf"\.{name}=(\d+)\s*$", l.strip())
            if m:
                total += int(m.group(1))
    return total


@pytest.mark.skipif(not LLVM, reason="no libLLVM in /usr/lib/x86_64-linux-gnu")
def test_evicted_table_is_reloaded(profd_bin, pprof, dwarf_build, tmp_path):
    """chain (-fomit-frame-pointer) runs; profd starts with a 16 MiB table
    limit; then four copies of libLLVM (~1.1M rows each: 9 MiB) are
    dlopened in turn by a process spinning 3 s each. The chain's stacks
    in the last 4 one-second profiles, after the copies are gone, must
    be >= 95 % exact."""
    copies = []
    for i in range(4):
        dst = str(tmp_path / f"libLLVM-copy{i}.so")
        shutil.copyfile(LLVM[0], dst)
        copies.append(dst)
    chain = dwarf_build("chain")
    hold = dwarf_build("dlhold")
    work = subprocess.Popen([chain, "60"])
    try:
        time.sleep(0.4)
        prof, head = start_profd(profd_bin, tmp_path / "out", "--duration", "22",
                                 "--profile-interval", "1",
                                 "--unwind-memory-limit", "16")
        time.sleep(3)
        for c in copies:
            subprocess.run([hold, "3", c], check=True, timeout=30)
        rc, err, paths = finish_profd(prof, head, tmp_path / "out")
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    assert len(paths) >= 10, err
    evictions = stat(pprof, paths, "unwind_evictions")
    evicted = stat(pprof, paths, "dwarf_table_evicted")
    reloads = stat(pprof, paths, "unwind_reloads")
    print(f"evictions {evictions}, dwarf_table_evicted {evicted}, reloads {reloads}")
    assert evictions > 0, "the copies did not fill the table memory\n" + err
    samples = of_pid(pprof, paths[-4:], work.pid)
    good, total = share(samples, is_stack(CHAIN))
    assert total >= 60 and good >= 0.95 * total, explain(
        "chain after the libraries passed", good, total, samples, pprof,
        paths[-4:], err, CHAIN)


# --- G: memory under a stream of distinct big binaries ----------------------

BIG_COPIES = 100        # distinct inodes
BIG_PARALLEL = 4
SYMBOL_BUDGET_MIB = 4  # above one interval's working set (~25 copies' tables)
# RSS ceiling of this run: profd's base at the defaults (BPF ring buffers
# and maps mmapped, ~40 MiB; heap: tables, snapshots, aggregation; see
# docs/PERFORMANCE.md "Memory and churn") plus the symbol cache budget.
RSS_BASE_MIB = 112


def build_id_of(path):
    """The GNU build ID of ELF @path as bytes (readelf -n)."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, out
    return bytes.fromhex(m.group(1))


def distinct_copy(real, dst, i):
    """Copy ELF @real to @dst with the build ID's last 4 bytes set to @i:
    a distinct binary to profd (a copy with the same build ID and size
    shares the first one's symbol table)."""
    data = bytearray(open(real, "rb").read())
    bid = build_id_of(real)
    at = data.find(bid)
    assert at > 0 and data.find(bid, at + 1) < 0, "build ID not found once"
    data[at + len(bid) - 4:at + len(bid)] = i.to_bytes(4, "little")
    with open(dst, "wb") as f:
        f.write(data)
    os.chmod(dst, 0o755)


def run_copies(real, tmp_path, prefix, count, measure):
    """Run @count distinct copies of the interpreter @real (each its own
    file, inode and build ID: @prefix000, ...) for 0.3 s each, BIG_PARALLEL at a time,
    deleting each after it exits; call @measure() after each exit and
    once more 2 s after the last (a reap and a trim). Returns the
    measures."""
    out, running = [], []
    for i in range(count):
        exe = str(tmp_path / f"{prefix}{i:03d}")
        distinct_copy(real, exe, i)
        running.append((exe, subprocess.Popen(
            [exe, "-S", "-c", "import time\nt = time.time() + 0.3\n"
             "while time.time() < t: sum(range(1000))"])))
        while len(running) >= BIG_PARALLEL:
            exe0, w = running.pop(0)
            w.wait(30)
            os.unlink(exe0)
            out.append(measure())
    for exe0, w in running:
        w.wait(30)
        os.unlink(exe0)
    time.sleep(2)   # a reap and a trim after the last exit
    out.append(measure())
    return out


def assert_copies_named(pprof, out, comm_prefix, min_total, log):
    """The samples of the interpreter copies (comm @comm_prefix...) in the
    profiles under @out are named: the interpreter is stripped (its
    static functions are "[copy]" without a debug file) but its .dynsym
    names the exported Py* functions, so a sample whose copy was opened
    has one, unless it ran in ld.so or start-up code (~35 % of 0.3 s
    runs)."""
    from test_profd import samples_of
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    samples = samples_of(pprof, paths, lambda l: l.get("comm", "").startswith(comm_prefix))
    named = sum(s["value"] for s in samples
                if any(f.startswith(("Py", "_Py")) for f in s["frames"]))
    total = sum(s["value"] for s in samples)
    assert total >= min_total, f"too few samples of the copies: {total}\n{log}"
    assert named >= 0.5 * total, (
        f"{named}/{total} samples with a named Py* frame; e.g. "
        f"{[s['frames'] for s in samples[:3]]}")


def _status_mib(pid, field):
    """/proc/PID/status's @field (e.g. VmRSS, RssAnon) in MiB; 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0


def _rss_mib(pid):
    return _status_mib(pid, "VmRSS")


def test_many_big_binaries_memory_stays_bounded(profd_bin, pprof, tmp_path):
    """100 distinct copies of python3 (7 MB each, their own inode and build
    ID: a table, a symbol table, an interpreter detection each) run 0.3 s of Python each, 4 at a
    time, under whole-machine profd with --symbol-cache-limit 4. RSS
    (sampled every 0.2 s) stays under RSS_BASE_MIB + the budget, the
    symbol cache sheds (counted), and the copies' samples still have a
    named leaf (not an address or a bare module name)."""
    from test_metrics import Profd, fetch_metrics, one

    # not shutil.which: a pyenv shim is a script, not the interpreter
    real = os.path.realpath(sys.executable)
    out = tmp_path / "out"
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "900",
               "--profile-interval", "5", "--sampling-frequency", "99",
               "--symbol-cache-limit", str(SYMBOL_BUDGET_MIB),
               "--http-address", "127.0.0.1:0"])
    rss = []
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        rss = run_copies(real, tmp_path, "pycopy", BIG_COPIES,
                         lambda: _rss_mib(p.proc.pid))
        fams = fetch_metrics(url)
    finally:
        rc = p.stop()
    assert rc == 0, p.stderr()
    peak = max(rss)
    sheds = one(fams, "profd_cache_evictions_total", cache="symbols")
    print(f"RSS first {rss[0]:.1f} peak {peak:.1f} last {rss[-1]:.1f} MiB; "
          f"symbol cache sheds {sheds}; heap "
          f"{one(fams, 'profd_heap_bytes', state='in_use') / 2**20:.1f} MiB in use, "
          f"{one(fams, 'profd_heap_bytes', state='free') / 2**20:.1f} MiB free")
    assert peak < RSS_BASE_MIB + SYMBOL_BUDGET_MIB, (peak, rss, p.stderr())
    assert sheds > 0, "the symbol cache never went over its budget"
    assert_copies_named(pprof, out, "pycopy", 50, p.stderr())


LIMIT_MIB = 80          # --memory-limit of the runs below: base 72 + 8
LIMIT_COPIES = 60


def held(pid, url):
    """(RSS, what the symbolizer holds past its budget) in MiB. Symbol
    tables of files live processes map are shed too, so the second is
    0 at each trim (a table read since may be over until the next)."""
    from test_metrics import fetch_metrics, one

    fams = fetch_metrics(url)
    over = max(0, one(fams, "profd_cache_bytes", cache="symbols") -
               one(fams, "profd_cache_budget_bytes", cache="symbols")) / 2**20
    return _rss_mib(pid), over


def test_memory_limit_holds_under_churn(profd_bin, pprof, tmp_path):
    """--memory-limit 80 (the fixed 72 MiB base + 8 MiB of caches: a
    3.2 MiB symbol budget, 2 MiB of flame graph + 1/8 for GPU): an exec storm (100/s of
    one short-lived binary) runs while 60 distinct python3 copies pass
    through, 4 at a time. RSS (sampled after each copy) stays under the
    limit, each cache stays within its budget at the end, the symbol
    cache sheds (counted), and the copies' frames are still named."""
    from test_metrics import Profd, fetch_metrics, one

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    storm = str(tmp_path / "execstorm")
    subprocess.run(["cc", "-O2", "-o", storm,
                    os.path.join(root, "bench", "execstorm.c")], check=True)
    real = os.path.realpath(sys.executable)
    out = tmp_path / "out"
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "900",
               "--profile-interval", "5", "--sampling-frequency", "99",
               "--memory-limit", str(LIMIT_MIB), "--symbol-cache-limit", "4",
               "--http-address", "127.0.0.1:0"])
    rss = []
    churn = None
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        churn = subprocess.Popen([storm, "100", "120", "2000"],
                                 stdout=subprocess.DEVNULL)
        rss = run_copies(real, tmp_path, "pylim", LIMIT_COPIES,
                         lambda: held(p.proc.pid, url))
        fams = fetch_metrics(url)
    finally:
        if churn:
            churn.kill()
            churn.wait()
        rc = p.stop()
    assert rc == 0, p.stderr()
    peak = max(r for r, _ in rss)
    over = max(o for _, o in rss)
    sheds = one(fams, "profd_cache_evictions_total", cache="symbols")
    # the storm's processes map binaries whose tables are compiled: their
    # unwind entries are written without a hand-off to the loader thread
    inline = one(fams, "profd_unwind_inline_runs_total")
    budgets = {c: one(fams, "profd_cache_budget_bytes", cache=c)
               for c in ("symbols", "flamegraph")}
    sizes = {c: one(fams, "profd_cache_bytes", cache=c) for c in budgets}
    print(f"RSS first {rss[0][0]:.1f} "
          f"peak {peak:.1f} last {rss[-1][0]:.1f} MiB (most held past it: {over:.1f}); "
          f"sizes {sizes} budgets {budgets}; symbol sheds {sheds}")
    assert budgets == {"symbols": (8 << 20) * 2 // 5, "flamegraph": (2 << 20) + (2 << 20) // 8}
    assert peak < LIMIT_MIB, (peak, rss, p.stderr())
    assert sizes["flamegraph"] <= budgets["flamegraph"], sizes
    assert sheds > 0, "the symbol cache never went over its budget"
    assert inline > 100, inline
    assert_copies_named(pprof, out, "pylim", 30, p.stderr())



HELD_COPIES = 8
HELD_SYMBOLS = 8000     # ~370 KiB of symbol table per copy


def build_held_program(tmp_path):
    """A program with HELD_SYMBOLS function symbols (a symbol table of
    ~370 KiB in profd) that sleeps, spins in held_spin() and sleeps again
    for the seconds given as its three arguments."""
    asm = tmp_path / "bigsyms.s"
    with open(asm, "w") as f:
        f.write(".text\n")
        for i in range(HELD_SYMBOLS):
            n = f"bigsym_function_{i:05d}"
            f.write(f".globl {n}\n.type {n}, @function\n{n}:\nret\n.size {n}, .-{n}\n")
    src = tmp_path / "held.c"
    src.write_text(r"""
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) void held_spin(double secs)
{
	volatile unsigned long x = 0;
	double end = now() + secs;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
}
int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	usleep(atof(argv[1]) * 1e6);
	held_spin(atof(argv[2]));
	usleep(atof(argv[3]) * 1e6);
	return 0;
}
""")
    exe = tmp_path / "held"
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(src), str(asm)], check=True)
    return str(exe)


def test_held_symbol_tables_are_shed_and_reloaded(profd_bin, pprof, tmp_path):
    """8 distinct copies of a program with a ~370 KiB symbol table (each
    its own build ID) live for 16 s under whole-machine profd with
    --symbol-cache-limit 1: every table is held (its process lives) and
    together they are 3 MiB. Copies 0 and 1 spin for the first 7 s while
    the others sleep, then copies 2 and 3 spin for 6 s. The symbolizer
    sheds the least recently needed held tables (the sleepers' first:
    profd_symbol_tables_total{event="shed"}), keeps its bytes within the
    budget (and the quarter more it keeps for tables whose samples wait
    for the write-out), and reads a shed table back when its code is
    sampled again ("reloaded"): copies 2 and 3, shed while they slept,
    have their samples named."""
    from test_metrics import Profd, fetch_metrics, one
    from test_profd import samples_of

    prog = build_held_program(tmp_path)
    out = tmp_path / "out"
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "900",
               "--profile-interval", "2", "--sampling-frequency", "99",
               "--symbol-cache-limit", "1", "--http-address", "127.0.0.1:0"])
    work, sizes = [], []
    plan = {0: (0, 7, 9), 1: (0, 7, 9), 2: (8, 6, 2), 3: (8, 6, 2)}
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        for i in range(HELD_COPIES):
            exe = str(tmp_path / f"bigheld{i}")
            distinct_copy(prog, exe, 2000 + i)
            work.append(subprocess.Popen(
                [exe] + [str(x) for x in plan.get(i, (16, 0, 0))]))
        for _ in range(15):
            time.sleep(1)
            fams = fetch_metrics(url)
            sizes.append(one(fams, "profd_cache_bytes", cache="symbols"))
        for w in work:
            w.wait(30)
        time.sleep(2.5)     # the last interval written
        fams = fetch_metrics(url)
    finally:
        for w in work:
            w.kill()
            w.wait()
        rc = p.stop()
    assert rc == 0, p.stderr()
    budget = one(fams, "profd_cache_budget_bytes", cache="symbols")
    shed = one(fams, "profd_symbol_tables_total", event="shed")
    reloaded = one(fams, "profd_symbol_tables_total", event="reloaded")
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    late = samples_of(pprof, paths, lambda l: l.get("comm") in ("bigheld2", "bigheld3"))
    named = sum(s["value"] for s in late if "held_spin" in s["frames"])
    total = sum(s["value"] for s in late)
    print(f"symbol cache bytes at each second {[round(x / 2**20, 2) for x in sizes]} MiB, "
          f"budget {budget / 2**20:.1f} MiB; tables shed {shed}, reloaded {reloaded}; "
          f"copies 2 and 3: {named}/{total} samples in held_spin; "
          f"partial.symbols_shed {stat(pprof, paths, 'symbols_shed')}")
    assert budget == 1 << 20
    assert shed >= 2, "the sleepers' held symbol tables were not shed"
    assert reloaded >= 2, "no shed table was read back"
    # within the budget and the quarter more kept for tables whose samples
    # wait for the write-out (a reload since the last trim may add one)
    assert sorted(sizes)[len(sizes) // 2] <= budget * 5 / 4, sizes
    assert total >= 300, f"too few samples of copies 2 and 3: {total}"
    assert named >= 0.8 * total, [s["frames"] for s in late[:5]]


def _rss_anon_mib(pid):
    return _status_mib(pid, "RssAnon")


NVTX_APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                        "tests", "nvtx", "nvtx_app")
NVTX_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                        "libprofd_inject.so")


@pytest.mark.skipif(not os.path.exists(NVTX_APP) or not os.path.exists(NVTX_LIB),
                    reason="NVTX support not built (no CUDA headers)")
def test_nvtx_flood_gives_its_queue_pages_back(profd_bin, tmp_path):
    """NVTX floods of 1M push+pop pairs each under whole-machine profd,
    until 1.4M spans were traced (48-byte events: more than the 64 MiB
    NVTX queue passed through; --memory-limit 2120 gives the queue its
    most, 64 MiB).
    Once the queue has drained, profd's anonymous RSS is back within 12
    MiB of what it was before: the queue's pages are given back, not kept
    resident by every byte a burst ever wrote (before: +40 MiB, for good).
    Lines off: the DWARF the symbolizer holds (libc's, ~10-25 MiB within
    the symbol budget) is not what this measures."""
    from test_metrics import Profd, fetch_metrics, one

    out = tmp_path / "out"
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "300",
               "--memory-limit", "2120", "--no-symbolize-lines",
               "--profile-interval", "5", "--http-address", "127.0.0.1:0"])
    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        time.sleep(3)
        before = _rss_anon_mib(p.proc.pid)
        assert one(fetch_metrics(url), "profd_nvtx_queue_budget_bytes") == 64 << 20
        env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.abspath(NVTX_LIB))
        peak_queue = spans = 0
        for _ in range(6):	# a loaded machine loses more: flood until enough passed
            subprocess.run([NVTX_APP, "flood", "--iter", "1000000"], env=env,
                           check=True, capture_output=True, timeout=120)
            fams = fetch_metrics(url)
            peak_queue = max(peak_queue, one(fams, "profd_nvtx_queue_bytes"))
            spans = one(fams, "profd_events_total", name="nvtx_spans")
            if spans >= 1_500_000:
                break
        deadline = time.time() + 60	# drained: no more spans for 2 s
        last = -1
        while time.time() < deadline:
            time.sleep(2)
            spans = one(fetch_metrics(url), "profd_events_total", name="nvtx_spans")
            if spans == last:
                break
            last = spans
        time.sleep(2)
        after = _rss_anon_mib(p.proc.pid)
        fams = fetch_metrics(url)
        spans = one(fams, "profd_events_total", name="nvtx_spans")
        queued = one(fams, "profd_nvtx_queue_bytes")
    finally:
        p.stop()
    assert spans >= 1_400_000, f"the floods were not traced: {spans} spans\n{p.stderr()}"
    assert after <= before + 12, (
        f"anonymous RSS {before:.1f} -> {after:.1f} MiB after {spans} spans "
        f"(queue peak seen {peak_queue} bytes)")
    assert queued < 1 << 20, f"the gauge says the queue holds {queued} bytes"


@pytest.mark.skipif(not os.path.exists(NVTX_APP) or not os.path.exists(NVTX_LIB),
                    reason="NVTX support not built (no CUDA headers)")
def test_nvtx_queue_stays_within_its_budget(profd_bin, tmp_path):
    """Whole-machine profd with --memory-limit 80 (the NVTX queue's share:
    256 KiB, a 32nd of the 8 MiB past the 72 MiB base) while two NVTX floods of 1M push+pop pairs run: the queue
    (profd_nvtx_queue_bytes, sampled every 0.1 s) never holds more than
    its budget, and profd's anonymous RSS stays within 24 MiB of what it
    was before (the 64 MiB queue it had whatever the limit let a starved
    tracer take profd to 146 MiB under a limit of 80)."""
    import threading
    from test_metrics import Profd, fetch_metrics, one

    p = Profd([profd_bin, "--output-dir", str(tmp_path / "out"), "--duration", "120",
               "--memory-limit", "80", "--profile-interval", "5",
               "--http-address", "127.0.0.1:0"])
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            try:
                fams = fetch_metrics(url)
                seen.append((one(fams, "profd_nvtx_queue_bytes"),
                             one(fams, "profd_nvtx_queue_budget_bytes"),
                             _rss_anon_mib(p.proc.pid)))
            except OSError:
                pass
            time.sleep(0.1)

    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        time.sleep(3)
        before = _rss_anon_mib(p.proc.pid)
        w = threading.Thread(target=watch, daemon=True)
        w.start()
        env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.abspath(NVTX_LIB))
        for _ in range(2):
            subprocess.run([NVTX_APP, "flood", "--iter", "1000000"], env=env,
                           check=True, capture_output=True, timeout=120)
        time.sleep(2)
        done.set()
        w.join(5)
        spans = one(fetch_metrics(url), "profd_events_total", name="nvtx_spans")
    finally:
        done.set()
        p.stop()
    assert seen, "no /metrics read during the floods"
    peak = max(q for q, _, _ in seen)
    budget = seen[-1][1]
    rss = max(r for _, _, r in seen)
    print(f"NVTX queue peak {peak / 2**10:.0f} KiB of {budget / 2**10:.0f}; "
          f"anon RSS {before:.1f} -> peak {rss:.1f} MiB; {spans} spans")
    assert spans > 0, "the floods were not traced"
    assert budget == 256 << 10, budget
    assert peak <= budget, f"the NVTX queue held {peak} bytes, over {budget}"
    assert rss <= before + 24, f"anonymous RSS {before:.1f} -> {rss:.1f} MiB"


PY_MANY_FUNCS = """
import time
src = "\\n".join(f"def f{i}(n):\\n    s = 0\\n    for j in range(n):\\n        s += j * {i}\\n    return s\\n"
                for i in range(300))
exec(src)
fs = [globals()[f"f{i}"] for i in range(300)]
end = time.time() + 2.5
while time.time() < end:
    for f in fs:
        f(300)
"""


def test_exited_interpreters_code_objects_are_dropped(profd_bin, tmp_path):
    """`profd exec` of a shell that runs six CPython processes in turn,
    each calling 300 functions of its own for 2.5 s (99 Hz): their code
    objects are read and cached while they run (profd_cache_entries{cache=
    "python_code_objects"} rises), and dropped once they exited and were
    reaped (within the interval and a second), not kept until the cache's
    LRU pushes them out. (`exec`: pytest's own interpreter stays out.)"""
    from test_metrics import Profd, fetch_metrics, one

    real = os.path.realpath(sys.executable)
    script = tmp_path / "many.py"
    script.write_text(PY_MANY_FUNCS)
    # --tracers python: the runtimes share the budget, Python alone has it all
    p = Profd([profd_bin, "exec", "--output-dir", str(tmp_path / "out"),
               "--profile-interval", "2", "--sampling-frequency", "99",
               "--tracers", "python",
               "--http-address", "127.0.0.1:0", "--", "sh", "-c",
               f"for i in 1 2 3 4 5 6; do {real} {script}; done; "
               "echo interpreters-done >&2; sleep 12"])

    def codes():
        return one(fetch_metrics(url), "profd_cache_entries", cache="python_code_objects")

    try:
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        peak = 0
        deadline = time.time() + 60
        while time.time() < deadline and "interpreters-done" not in p.stderr():
            peak = max(peak, codes())
            time.sleep(0.5)
        after = codes()
        deadline = time.time() + 8
        while time.time() < deadline and after > peak // 4:
            time.sleep(1)
            after = codes()
        fams = fetch_metrics(url)
        nbytes = one(fams, "profd_cache_bytes", cache="python")
        budget = one(fams, "profd_cache_budget_bytes", cache="python")
    finally:
        p.stop()
    assert peak >= 100, f"the interpreters' code objects were not read: peak {peak}"
    assert after <= peak // 4, (
        f"code objects of exited interpreters kept: {after} (peak {peak})")
    # an eighth of the default limit's share: 160 - 72 (base) - 28 (lines)
    assert 0 < nbytes and budget == (60 << 20) // 8, (nbytes, budget)


@pytest.mark.skipif(not os.path.exists(NVTX_APP) or not os.path.exists(NVTX_LIB),
                    reason="NVTX support not built (no CUDA headers)")
def test_sigterm_during_an_nvtx_flood_exits_promptly(profd_bin, tmp_path):
    """Two threads flood NVTX (push+pop as fast as they can: the ringbuf
    never runs dry) under whole-machine profd; SIGTERM 4 s in. profd
    exits 0 within 3 s with its profiles written (it took 6-15 s when the
    reader's consume loop only returned on an empty ring)."""
    out = tmp_path / "out"
    prof = subprocess.Popen([profd_bin, "--output-dir", str(out), "--profile-interval", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.abspath(NVTX_LIB))
    flood = None
    try:
        time.sleep(3)
        flood = subprocess.Popen([NVTX_APP, "flood", "--iter", "20000000", "--threads", "2"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(4)
        t0 = time.monotonic()
        prof.terminate()
        _, err = prof.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if flood:
            flood.kill()
            flood.wait()
        if prof.poll() is None:
            prof.kill()
            prof.wait()
    assert prof.returncode == 0, err
    assert took < 3, f"exit took {took:.1f} s during the flood\n{err}"
    assert glob.glob(str(out / "cpu-*.pb.gz")), err


PY_LONG_NAMES = """
import sys, time
# 4,000 functions whose qualified names and file name are ~1,000
# characters (a hostile or generated code base): each distinct frame
# costs profd ~2 KiB to keep
pad = "x" * 1000
fs = []
for i in range(4000):
    ns = {}
    exec(compile(f"def f{i}_{pad}(n):\\n    s = 0\\n    for j in range(n):\\n        s += j\\n    return s\\n",
                 f"/gen/{i}/{pad}.py", "exec"), ns)
    fs.append(ns[f"f{i}_{pad}"])
print("ready", flush=True, file=sys.stderr)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for f in fs:
        f(2000)
"""


def _metrics_while_running(p, seconds):
    """Yield /metrics (parsed) of Profd @p every 0.5 s while it runs, at
    most @seconds; stops when it no longer answers."""
    from test_metrics import fetch_metrics

    url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                      10).group(1)
    deadline = time.time() + seconds
    while time.time() < deadline and p.proc.poll() is None:
        try:
            fams = fetch_metrics(url)
        except OSError:
            return
        yield fams
        time.sleep(0.5)


def test_python_frame_tables_stay_within_their_budget(profd_bin, pprof, tmp_path):
    """A CPython program runs 4,000 functions whose names and files are
    ~1,000 characters each, for 24 s at 99 Hz, under `profd exec
    --memory-limit 80` (Python's share: 1 MiB, half for code objects, a
    quarter for each frame table generation). Thousands of distinct
    frames of ~2 KiB each would take several MiB; profd's Python heap
    (profd_cache_bytes{cache="python"}, sampled every 0.5 s) stays within
    its budget; the frame tables are renewed (counted) and the
    functions are still named in the profiles."""
    from test_metrics import Profd, one

    real = os.path.realpath(sys.executable)
    script = tmp_path / "long.py"
    script.write_text(PY_LONG_NAMES)
    out = tmp_path / "out"
    # the runtimes share their memory equally: Python alone has it all
    p = Profd([profd_bin, "exec", "--output-dir", str(out), "--memory-limit", "80",
               "--profile-interval", "2", "--sampling-frequency", "99",
               "--tracers", "python",
               "--http-address", "127.0.0.1:0", "--", real, str(script), "24"])
    seen, budget, renewals = [], 0, 0
    try:
        for fams in _metrics_while_running(p, 60):
            seen.append(one(fams, "profd_cache_bytes", cache="python"))
            budget = one(fams, "profd_cache_budget_bytes", cache="python")
            renewals = one(fams, "profd_events_total", name="python_frame_table_rotations")
        rc = p.proc.wait(timeout=30)
    finally:
        p.stop()
    assert rc == 0, p.stderr()
    assert budget == 1 << 20, budget
    peak = max(seen)
    print(f"python heap peak {peak / 2**20:.2f} MiB of {budget / 2**20:.0f}; "
          f"frame table renewals {renewals}")
    assert peak <= budget, f"Python's heap {peak} bytes, over its budget {budget}"
    assert renewals >= 1, "the frame table was never renewed"
    named = set()
    for f in sorted(out.glob("*.pb.gz")):
        text = subprocess.run([pprof, "-traces", str(f)], capture_output=True,
                              text=True, timeout=60).stdout
        named.update(re.findall(r"\bf(\d+)_x{1000}\b", text))
    assert len(named) >= 200, f"only {len(named)} long-named functions in the profiles"


def test_otlp_queue_stays_within_its_budget(profd_bin, tmp_path):
    """An OTLP endpoint that accepts connections and never answers (a
    hung collector): under `profd exec --memory-limit 80` (the export
    queue's share: 512 KiB) the profiles of a program with thousands of
    ~1,000-character frame names (~100-200 KiB a request) pile up for
    16 s; the queue (profd_export_queue_bytes, sampled every 0.5 s) never
    holds more than its budget, and what did not fit is counted dropped."""
    import socket
    from test_metrics import Profd, one

    real = os.path.realpath(sys.executable)
    script = tmp_path / "long.py"
    script.write_text(PY_LONG_NAMES)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        port = srv.getsockname()[1]
        p = Profd([profd_bin, "exec", "--output-dir", str(tmp_path / "out"),
                   "--memory-limit", "80", "--profile-interval", "1",
                   "--sampling-frequency", "99", "--http-address", "127.0.0.1:0",
                   "--otlp-endpoint", f"http://127.0.0.1:{port}",
                   "--", real, str(script), "16"])
        peak, budget, dropped = 0, 0, 0
        try:
            for fams in _metrics_while_running(p, 40):
                peak = max(peak, one(fams, "profd_export_queue_bytes"))
                budget = one(fams, "profd_export_queue_budget_bytes")
                dropped = one(fams, "profd_export_items_dropped_total")
        finally:
            p.stop()
    print(f"export queue peak {peak / 2**10:.0f} KiB of {budget / 2**10:.0f}; "
          f"items dropped {dropped}")
    assert budget == 512 << 10, budget
    assert peak > budget / 4, f"the profiles never queued up: peak {peak} bytes"
    assert peak <= budget, f"the export queue held {peak} bytes, over {budget}"
    assert dropped > 0, "nothing was dropped: the queue was never full"


JAVA = shutil.which("java")
JAVAC = shutil.which("javac")
NODE = shutil.which("node")
RUNTIME_FUNCS = 1500     # methods / functions of each busy program below


def _busy_sources(tmp_path):
    """A CPU-busy Java program and a node one, each RUNTIME_FUNCS small
    functions called in turn (many JIT'd methods): (java argv, node argv)
    for a run of 60 s."""
    java, js = ["public class Busy {"], []
    for i in range(RUNTIME_FUNCS):
        body = (f"long s = x; for (int k = 0; k < {10 + i % 7}; k++) "
                f"s = s * 31 + (s >>> {1 + i % 13}) + {i}; return s;")
        java.append(f"  static long m{i}(long x) {{ {body} }}")
        js.append(f"function f{i}(x) {{ let s = x; for (let k = 0; k < {10 + i % 7}; k++) "
                  f"s = (s * 31 + (s >>> {1 + i % 13}) + {i}) | 0; return s; }}")
    java.append("  public static void main(String[] a) {\n"
                "    long end = System.currentTimeMillis() + 60000, s = 0; int r = 0;\n"
                "    while (System.currentTimeMillis() < end) { r++;")
    java += [f"      s += m{i}(s + r);" for i in range(RUNTIME_FUNCS)]
    java.append("    }\n    System.out.println(s);\n  }\n}")
    js.append("const end = Date.now() + 60000; let s = 0, r = 0;\n"
              "while (Date.now() < end) { r++;")
    js += [f"  s = (s + f{i}(s + r)) | 0;" for i in range(RUNTIME_FUNCS)]
    js.append("}\nconsole.log(s);")
    (tmp_path / "Busy.java").write_text("\n".join(java) + "\n")
    (tmp_path / "busy.js").write_text("\n".join(js) + "\n")
    subprocess.run([JAVAC, "-d", str(tmp_path), str(tmp_path / "Busy.java")], check=True)
    return ([JAVA, "-cp", str(tmp_path), "Busy"], [NODE, str(tmp_path / "busy.js")])


@pytest.mark.skipif(not JAVA or not JAVAC or not NODE,
                    reason="needs java and javac (openjdk 17) and node")
def test_memory_limit_holds_beside_a_jvm_and_node(profd_bin, pprof, tmp_path):
    """--memory-limit 80, whole machine, while a busy JVM and a busy node
    (each 1500 JIT'd functions) run: profd's VmHWM (the kernel's own
    high-water mark of its RSS, start-up included) stays within the
    limit, and both runtimes' frames are still named. Before the fix it
    peaked at 83-86 MiB: each runtime's detector read node's 12.5 MiB of
    symbol strings whole, V8's read both tables at once (17 MiB), beside
    node's unwind table being built (19 MiB) on another thread."""
    from test_metrics import Profd, fetch_metrics
    from test_profd import samples_of

    java_argv, node_argv = _busy_sources(tmp_path)
    work = [subprocess.Popen(a, stdout=subprocess.DEVNULL) for a in (java_argv, node_argv)]
    out = tmp_path / "out"
    p = None
    try:
        time.sleep(2)   # both start their loops; their JITs are busy
        p = Profd([profd_bin, "--output-dir", str(out), "--duration", "900",
                   "--memory-limit", str(LIMIT_MIB), "--http-address", "127.0.0.1:0"])
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        for _ in range(25):     # followed as a breaker did: /metrics each second
            fetch_metrics(url)
            time.sleep(1)
        hwm = _status_mib(p.proc.pid, "VmHWM")
        rss = _rss_mib(p.proc.pid)
    finally:
        rc = p.stop() if p else None
        for w in work:
            w.kill()
            w.wait()
    assert rc == 0, p.stderr()
    print(f"VmHWM {hwm:.1f} MiB, VmRSS {rss:.1f} MiB at --memory-limit {LIMIT_MIB}")
    assert hwm <= LIMIT_MIB, (hwm, p.stderr())
    paths = sorted(glob.glob(str(out / "cpu-*.pb.gz")))
    frames = [f for s in samples_of(pprof, paths, lambda l: True) for f in s["frames"]]
    assert any(re.search(r"Busy\W+m\d+", f) for f in frames), "no Java method named"
    assert any(re.search(r"\bf\d+\b", f) for f in frames), "no JS function named"
