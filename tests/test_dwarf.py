"""Integration tests of the DWARF (.eh_frame) unwinder: the real profd
against workloads from tests/workloads/dwarf, built here with
-O2 -fomit-frame-pointer (no function keeps a frame pointer, so only the
unwind tables give the caller chain), read back with Google's pprof.

Each test asserts that >= 95 % of the workload's samples carry exactly the
expected frames from the leaf down to main (kernel frames on top stripped,
frames below main ignored: user_to_main), once profd has the workload's
unwind tables: profd builds them, for every process of the machine, from
their first samples on, and meanwhile walks frame pointers; how long that
takes depends on the machine and what runs on it (seconds on a busy
2-CPU one). So profd writes a profile a second and says, with
--debug-pid, how it unwound each of the workload's samples; the profiles
judged are those after the one that was open when the first sample
unwound with the tables was read (settle). Failure messages show the most
common stacks seen and profd's stat./partial./lost. comment lines.

perf (linux-perf, `--call-graph dwarf`) is the reference where it gets a
case right: test_call_chain[pie] and test_large_frames run it on the same
process while profd samples (perf agrees on the chain; its 8 KiB stack
copy cuts the large frames, which profd must not).
test_without_dwarf_unwinding_stacks_are_incomplete shows the same
workloads fail under --no-dwarf-unwinding: DWARF is what makes them pass.

Whole file: about 3 minutes (profd's BPF load takes ~3 s per run).
Needs root, like profd itself.
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ROOT
from pprof_traces import comments
from test_profd import samples_of, share, user_to_main

SRC = os.path.join(ROOT, "tests", "workloads", "dwarf")
FREQ = "99"
DURATION = "3"          # seconds of profiling per run
WARM = 0.4              # the workload runs this long before profd starts
SETTLE = 2              # s more for settle=True runs: profd building unwind tables
EXACT = 0.95
MIN_SAMPLES = 60        # 99 Hz x 3 s of one busy thread: ~300 on an idle machine
RUN = "30"              # workload run time: killed when profd is done

CFLAGS = ["-O2", "-fomit-frame-pointer"]
VARIANTS = {
    "pie": ["-fPIE", "-pie"],
    "nopie": ["-fno-pie", "-no-pie"],
    "static": ["-static"],
}
CHAIN = ["d_chain_e", "d_chain_d", "d_chain_c", "d_chain_b", "d_chain_a", "main"]


# --- building -------------------------------------------------------------

@pytest.fixture(scope="session")
def dwarf_build(tmp_path_factory):
    """build(name, variant="pie") -> path of tests/workloads/dwarf/NAME.c
    (or .cpp: g++) built -O2 -fomit-frame-pointer, once per session."""
    out = tmp_path_factory.mktemp("dwarf-workloads")
    cache = {}

    def build(name, variant="pie"):
        key = (name, variant)
        if key not in cache:
            cpp = os.path.exists(os.path.join(SRC, name + ".cpp"))
            src = os.path.join(SRC, name + (".cpp" if cpp else ".c"))
            dst = str(out / (f"{name}-{variant}" if variant != "pie" else name))
            if variant == "shared":
                flags = ["-fPIC", "-shared"]
                dst = str(out / f"lib{name}.so")
            else:
                flags = VARIANTS[variant]
            subprocess.run(["g++" if cpp else "gcc", *CFLAGS, *flags, "-o", dst, src],
                           check=True)
            cache[key] = dst
        return cache[key]

    return build


def elf_symbols(path):
    """{name: (value, size)} of the defined symbols of @path (nm -S)."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


# --- running and judging --------------------------------------------------

def profile(profd_bin, outdir, argv, *profd_args, warm=WARM, duration=DURATION,
            before_profd=None, while_sampling=None, before_stop=None, only_workload=False,
            settle=False):
    """Start the workload @argv, let it run @warm s, run profd for @duration
    s (whole machine unless @profd_args say otherwise, or the workload
    alone with --pid when @only_workload), stop the workload.
    before_profd(proc) runs after the warm-up (e.g. deleting the binary),
    while_sampling(proc) once profd samples (e.g. starting perf),
    before_stop(proc) after profd is done (e.g. waiting for perf).
    @settle: profd runs SETTLE s longer, writing a profile a second, and
    only the profiles settled() keeps are returned.
    Returns (workload Popen, profd returncode, profd stderr, profile paths)."""
    if settle:
        duration = str(int(duration) + SETTLE)
        profd_args = ("--profile-interval", "1") + profd_args
    work = subprocess.Popen(argv)
    try:
        time.sleep(warm)
        assert work.poll() is None, f"workload {argv} exited early: {work.returncode}"
        if before_profd:
            before_profd(work)
        if only_workload:
            profd_args = ("--pid", str(work.pid)) + profd_args
        if settle:
            profd_args = ("--debug-pid", str(work.pid)) + profd_args
        prof, head = start_profd(profd_bin, outdir, "--duration", duration, *profd_args)
        if while_sampling:
            while_sampling(work)
        rc, err, paths = finish_profd(prof, head, outdir)
        if before_stop:
            before_stop(work)
    finally:
        work.kill()
        work.wait()
    if settle:
        err, paths = settled(err, work.pid)
    return work, rc, err, paths


def settled(err, pid):
    """profd's stderr (run with --profile-interval 1 --debug-pid @pid)
    without the debug lines, and the profiles written after the first of
    @pid's samples unwound with its tables (unwinder=dwarf) was read: the
    reader reads samples in order, so every sample walked by frame pointer
    before the tables were in is in that interval's profile or an earlier
    one."""
    lines = err.splitlines(keepends=True)
    first = next((i for i, l in enumerate(lines)
                  if re.match(rf"profd: debug: sample pid={pid} .*unwinder=dwarf", l)), None)
    rest = "".join(l for l in lines if not l.startswith(("profd: debug:", "  #")))
    assert first is not None, f"no sample of pid {pid} was unwound with its tables\n{rest}"
    paths, open_interval = [], None
    for l in lines[first:]:
        m = re.match(r"profd: interval (\d+): .*, wrote (\S+)$", l.strip())
        if m and open_interval is None:
            open_interval = int(m.group(1))
        elif m:
            paths.append(m.group(2))
    return rest, paths


def start_profd(profd_bin, outdir, *args):
    """Start profd in the background; return once it samples (its
    "profd: sampling" line: BPF loaded and attached, which takes seconds).
    finish_profd() collects the rest."""
    os.makedirs(outdir, exist_ok=True)
    prof = subprocess.Popen([profd_bin, "--output-dir", str(outdir),
                             "--sampling-frequency", FREQ, *args],
                            stderr=subprocess.PIPE, text=True)
    head = ""
    for line in prof.stderr:
        head += line
        if "sampling" in line:
            return prof, head
    prof.wait()
    pytest.fail(f"profd did not start: rc {prof.returncode}\n{head}")


def finish_profd(prof, head, outdir, timeout=60):
    """Wait for profd (started with --duration); (rc, stderr, profile paths)."""
    try:
        rest = prof.communicate(timeout=timeout)[1]
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
    return prof.returncode, head + rest, sorted(glob.glob(os.path.join(outdir, "cpu-*.pb.gz")))


def of_pid(pprof, paths, pid):
    return samples_of(pprof, paths, lambda l: l.get("pid") == str(pid))


def counters(pprof, paths):
    """profd's stat./partial./lost. comment lines of every profile (pprof -raw)."""
    lines = []
    for p in paths:
        lines += [l.strip() for l in comments(pprof, p).splitlines()
                  if re.search(r"stat\.|partial\.|lost\.", l, re.I)
                  and not re.search(r"=0$", l.strip())]
    return lines


def top_stacks(samples, n=6, head=9, tail=3):
    """The @n most common user_to_main stacks; a long one shows its first
    @head and last @tail frames."""
    c = collections.Counter()
    for s in samples:
        c[tuple(user_to_main(s["frames"]))] += s["value"]
    rows = []
    for frames, v in c.most_common(n):
        shown = list(frames)
        if len(frames) > head + tail + 1:
            shown = (shown[:head] + [f"... {len(frames) - head - tail} more ..."]
                     + shown[-tail:])
        rows.append(f"  {v:5d}  {shown}  ({len(frames)} frames)")
    return "\n".join(rows)


def explain(what, good, total, samples, pprof, paths, err, want=None):
    msg = [f"{what}: {good}/{total} samples exact (need >= {EXACT:.0%})"]
    if want is not None:
        n = len(want)
        if isinstance(want, list) and n > 13:
            want = want[:9] + [f"... {n - 12} more ..."] + want[-3:]
        msg.append(f"expected: {want}  ({n} frames)" if isinstance(want, list)
                   else f"expected: {want}")
    msg.append("most common stacks seen (leaf first, to main):")
    msg.append(top_stacks(samples))
    msg.append("non-zero counters: " + "; ".join(counters(pprof, paths)))
    msg.append("profd stderr:\n" + err.strip())
    return "\n".join(msg)


def assert_exact(pprof, paths, err, samples, pred, what, want=None,
                 min_samples=MIN_SAMPLES):
    good, total = share(samples, pred)
    assert total >= min_samples, (f"{what}: too few samples of the workload: {total}\n"
                                  + explain(what, good, total, samples, pprof, paths,
                                            err, want))
    assert good >= EXACT * total, explain(what, good, total, samples, pprof, paths,
                                          err, want)
    return good, total


def is_stack(want):
    return lambda s: user_to_main(s["frames"]) == want


def run_exact(profd_bin, pprof, tmp_path, argv, want, *profd_args, what=None):
    work, rc, err, paths = profile(profd_bin, tmp_path, argv, *profd_args, settle=True)
    assert rc == 0, err
    assert paths, err
    samples = of_pid(pprof, paths, work.pid)
    what = what or os.path.basename(argv[0])
    good, total = assert_exact(pprof, paths, err, samples, is_stack(want), what, want)
    print(f"{what}: {good}/{total} exact")
    return good, total


# --- perf --call-graph dwarf on the same process (case 13) --------------------

def perf_stacks(data, dsos=False):
    """User frames (leaf first) of each sample in `perf script` of @data:
    names, or (name, dso) pairs when @dsos."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    stacks, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            if cur:
                stacks.append(cur)
            cur = None
        elif not line[0].isspace():
            cur = []
        elif cur is not None:
            m = re.match(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
            if m and "kernel.kallsyms" not in m.group(2):
                name = re.sub(r"\+0x[0-9a-f]+$", "", m.group(1))
                cur.append((name, m.group(2)) if dsos else name)
    if cur:
        stacks.append(cur)
    return stacks


def profile_with_perf(profd_bin, tmp_path, argv, dsos=False, only_workload=False,
                      settle=False):
    """profile() with `perf record -e cpu-clock -F 99 --call-graph dwarf -p
    PID -- sleep 3` sampling the same workload while profd does; perf's
    stacks as perf_stacks(data, @dsos) reads them."""
    data = str(tmp_path / "perf.data")
    perf, perr = None, ""

    def start_perf(work):
        nonlocal perf
        perf = subprocess.Popen(["perf", "record", "-q", "-o", data, "-e", "cpu-clock",
                                 "-F", FREQ, "--call-graph", "dwarf", "-p", str(work.pid),
                                 "--", "sleep", DURATION],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_perf(work):
        nonlocal perr
        perr = perf.communicate(timeout=30)[1]   # before the workload is killed

    try:
        work, rc, err, paths = profile(profd_bin, tmp_path / "out", argv,
                                       while_sampling=start_perf, before_stop=wait_perf,
                                       only_workload=only_workload, settle=settle)
    finally:
        if perf and perf.poll() is None:
            perf.kill()
            perf.wait()
    assert perf.returncode == 0, perr
    return work, rc, err, paths, perf_stacks(data, dsos)


# --- 1. call chain, PIE / non-PIE / static ----------------------------------

@pytest.mark.parametrize("variant", ["pie", "nopie", "static"])
def test_call_chain(profd_bin, pprof, dwarf_build, tmp_path, variant):
    """The PIE run is also recorded by perf --call-graph dwarf at the same
    time (case 13): both get the chain right."""
    exe = dwarf_build("chain", variant)
    if variant != "pie":
        run_exact(profd_bin, pprof, tmp_path, [exe, RUN], CHAIN, what=f"chain ({variant})")
        return
    work, rc, err, paths, pstacks = profile_with_perf(profd_bin, tmp_path, [exe, RUN],
                                                      settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    good, total = assert_exact(pprof, paths, err, samples, is_stack(CHAIN), "chain", CHAIN)
    pgood = sum(1 for s in pstacks if user_to_main(s) == CHAIN)
    print(f"chain: profd {good}/{total} exact, perf {pgood}/{len(pstacks)} exact")
    assert len(pstacks) >= MIN_SAMPLES, f"perf: {len(pstacks)} samples"
    assert pgood >= EXACT * len(pstacks), (
        f"perf: {pgood}/{len(pstacks)} exact: "
        f"{collections.Counter(map(tuple, pstacks)).most_common(3)}")


# --- 2. recursion 200 deep (default --max-stack-depth 256) ------------------

def test_recursion_200(profd_bin, pprof, dwarf_build, tmp_path):
    want = ["rec_leaf"] + ["rec"] * 200 + ["main"]
    run_exact(profd_bin, pprof, tmp_path, [dwarf_build("recursion"), RUN, "200"], want)


# --- 3. a call to a noreturn function is the caller's last instruction ------

def test_noreturn_call_is_last_instruction(profd_bin, pprof, dwarf_build, tmp_path):
    exe = dwarf_build("noreturn")
    syms = elf_symbols(exe)
    die_start, die_size = syms["die_in"]
    # the workload is what it claims: die_in ends with its call, and the
    # return address is the first byte of another function
    assert syms["after_die_in"][0] == die_start + die_size, syms
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                          f"--start-address={die_start:#x}",
                          f"--stop-address={die_start + die_size:#x}", exe],
                         check=True, capture_output=True, text=True).stdout
    insns = [l for l in dis.splitlines() if re.match(r"^\s+[0-9a-f]+:\s", l)]
    assert "call" in insns[-1] and "spin_forever" in insns[-1], dis
    run_exact(profd_bin, pprof, tmp_path, [exe, RUN],
              ["spin_forever", "die_in", "nr_outer", "main"])


# --- 4. time in a signal handler, on the thread's stack and on a sigaltstack -

SIG_CHAIN = ["sig_c", "sig_b", "sig_a", "main"]


def handler_stack_ok(frames):
    """handler_spin, on_prof, __restore_rt, sig_c .. main.

    The sigreturn trampoline (glibc's __restore_rt, the sa_restorer the
    signal frame returns to) is a frame, as perf --call-graph dwarf shows
    it too. Debian's libc has the symbol only in its detached debug file
    (libc6-dbg, installed by scripts/deps.sh --test), and the frame is
    entered at its first byte rather than called, so naming it right also
    checks that profd symbolizes it at its exact pc, not at pc - 1."""
    return (frames[:2] == ["handler_spin", "on_prof"] and frames[-4:] == SIG_CHAIN
            and frames[2:-4] == ["__restore_rt"])


@pytest.mark.parametrize("stack", ["thread-stack", "sigaltstack"])
def test_signal_handler(profd_bin, pprof, dwarf_build, tmp_path, stack):
    argv = [dwarf_build("signal"), RUN] + (["altstack"] if stack == "sigaltstack" else [])
    work, rc, err, paths = profile(profd_bin, tmp_path, argv, settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    in_handler = [s for s in samples if user_to_main(s["frames"])[:1] == ["handler_spin"]]
    # the handler takes ~3/4 of the time: most samples are there
    _, total = share(samples, lambda s: True)
    h_total = sum(s["value"] for s in in_handler)
    assert h_total >= 0.5 * total, explain(f"signal ({stack}): handler samples",
                                           h_total, total, samples, pprof, paths, err)
    good, h_total = assert_exact(pprof, paths, err, in_handler,
                                 lambda s: handler_stack_ok(user_to_main(s["frames"])),
                                 f"signal ({stack}): samples in the handler",
                                 ["handler_spin", "on_prof", "__restore_rt"] + SIG_CHAIN,
                                 min_samples=MIN_SAMPLES // 2)
    # and the samples outside the handler have the plain chain
    assert_exact(pprof, paths, err, samples,
                 lambda s: (user_to_main(s["frames"]) == SIG_CHAIN
                            or handler_stack_ok(user_to_main(s["frames"]))),
                 f"signal ({stack}): all samples", SIG_CHAIN)
    tramp = collections.Counter()
    for s in in_handler:
        f = user_to_main(s["frames"])
        tramp[f[2] if handler_stack_ok(f) and len(f) == 7 else "(absent or wrong)"] += s["value"]
    print(f"signal ({stack}): {good}/{h_total} handler samples exact; "
          f"frame between on_prof and sig_c (samples): {dict(tramp)}; not exact:\n"
          + top_stacks([s for s in in_handler
                        if not handler_stack_ok(user_to_main(s["frames"]))], n=3))


# --- 5. a function split into a .cold part -----------------------------------

def test_cold_partition(profd_bin, pprof, dwarf_build, tmp_path):
    exe = dwarf_build("cold")
    syms = elf_symbols(exe)
    assert "split_work.cold" in syms, sorted(s for s in syms if "split" in s)
    work, rc, err, paths = profile(profd_bin, tmp_path, [exe, RUN], settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    below = ["split_work.cold", "cold_b", "cold_a", "main"]
    in_cold = is_stack(below)
    in_leaf = is_stack(["cold_leaf"] + below)
    assert_exact(pprof, paths, err, samples, lambda s: in_cold(s) or in_leaf(s),
                 "cold", f"{below} or {['cold_leaf'] + below}")
    # samples land in the .cold part itself and in its callee
    for pred, name in ((in_cold, "in split_work.cold"), (in_leaf, "in cold_leaf")):
        n, total = share(samples, pred)
        assert n >= 0.2 * total, explain(f"cold: samples {name}", n, total, samples,
                                         pprof, paths, err)


# --- 6. a libc callback: qsort ------------------------------------------------

QSORT_NAMES = {"cmp_spin", "sort_b", "sort_a", "main"}


def qsort_ok(frames):
    """cmp_spin, >= 1 libc frame (qsort internals, any names), sort_b .. main."""
    return (len(frames) >= 5 and frames[0] == "cmp_spin"
            and frames[-3:] == ["sort_b", "sort_a", "main"]
            and not QSORT_NAMES & set(frames[1:-3]))


def test_qsort_callback(profd_bin, pprof, dwarf_build, tmp_path):
    work, rc, err, paths = profile(profd_bin, tmp_path, [dwarf_build("qsort"), RUN],
                                   settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    assert_exact(pprof, paths, err, samples, lambda s: qsort_ok(user_to_main(s["frames"])),
                 "qsort", ["cmp_spin", "(libc frames)", "sort_b", "sort_a", "main"])
    libc = collections.Counter(tuple(user_to_main(s["frames"])[1:-3]) for s in samples
                               if qsort_ok(user_to_main(s["frames"])))
    print("qsort: libc frames between cmp_spin and sort_b:", libc.most_common(3))


# --- 7. 20 frames of 2 KiB each -------------------------------------------------

BIG = ["big_leaf"] + ["big_frame"] * 20 + ["main"]


def test_large_frames(profd_bin, pprof, dwarf_build, tmp_path):
    """Recorded by perf --call-graph dwarf at the same time too (case 13):
    its 8 KiB user stack copy cuts these stacks, profd's are complete."""
    work, rc, err, paths, pstacks = profile_with_perf(profd_bin, tmp_path,
                                                      [dwarf_build("bigframes"), RUN],
                                                      settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    good, total = assert_exact(pprof, paths, err, samples, is_stack(BIG), "bigframes", BIG)
    depths = collections.Counter(len(user_to_main(s)) for s in pstacks
                                 if s and s[0] == "big_leaf")
    pgood = sum(1 for s in pstacks if user_to_main(s) == BIG)
    print(f"bigframes: profd {good}/{total} complete ({len(BIG)} frames to main); "
          f"perf {pgood}/{len(pstacks)} complete, its depths (frames: samples): "
          f"{dict(sorted(depths.items()))}")
    # the premise of the comparison: perf's 8 KiB stack copy cuts these stacks
    assert len(pstacks) >= MIN_SAMPLES, f"perf: {len(pstacks)} samples"
    assert pgood < 0.5 * len(pstacks), "perf was complete: the frames are not large?"


# --- 8. the hot leaf in a dlopen'ed library -------------------------------------

DL = ["lib_leaf", "lib_entry", "dl_b", "dl_a", "main"]


def test_dlopen_library(profd_bin, pprof, dwarf_build, tmp_path):
    lib = dwarf_build("libhot", "shared")
    run_exact(profd_bin, pprof, tmp_path, [dwarf_build("dlopen"), RUN, lib], DL)


def test_dlopen_after_profd_saw_the_process(profd_bin, pprof, dwarf_build, tmp_path):
    """The process starts once profd samples, spins 1.5 s in pre_spin (profd
    builds its tables, without the library), then loads the library. From
    the second 1 s profile with samples in the library on, >= 95 % of them
    are exact."""
    lib = dwarf_build("libhot", "shared")
    argv = [dwarf_build("dlopen"), RUN, lib, "1.5"]
    prof, head = start_profd(profd_bin, tmp_path, "--duration", "6",
                             "--profile-interval", "1")
    work = subprocess.Popen(argv)
    try:
        rc, err, paths = finish_profd(prof, head, tmp_path)
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    per = [of_pid(pprof, [p], work.pid) for p in paths]
    lib_per = [[s for s in ss if user_to_main(s["frames"])[:1] == ["lib_leaf"]] for ss in per]
    first = next((i for i, ss in enumerate(lib_per) if ss), None)
    assert first is not None, explain("dlopen late: no sample in lib_leaf", 0, 0,
                                      sum(per, []), pprof, paths, err)
    later = sum(lib_per[first + 1:], [])
    assert_exact(pprof, paths, err, later, is_stack(DL),
                 "dlopen late: lib_leaf samples after the first profile with any", DL)
    # before the dlopen: pre_spin's own chain
    pre = [s for s in sum(per, []) if user_to_main(s["frames"])[:1] == ["pre_spin"]]
    assert_exact(pprof, paths, err, pre, is_stack(["pre_spin", "main"]),
                 "dlopen late: before dlopen", ["pre_spin", "main"], min_samples=30)


# --- 9. C++ std::sort with a lambda comparator --------------------------------

LAMBDA_CALLERS = ["sort_inner(std::vector<int, std::allocator<int> >&)",
                  "sort_outer(double)", "main"]


def lambda_ok(frames):
    """the lambda (sort_inner(...)::{lambda(int, int)#1}::operator()...),
    std::sort internals (std::__introsort_loop<...>, ..., possibly none: GCC
    inlines some of them into sort_inner), then sort_inner, sort_outer, main."""
    if len(frames) < 4 or frames[-3:] != LAMBDA_CALLERS:
        return False
    if "lambda" not in frames[0] or not frames[0].startswith("sort_inner("):
        return False
    # internals: names whose own part (before the template arguments) is std::
    return all(re.match(r"^(void |bool )?std::", f) for f in frames[1:-3])


def test_cxx_sort_lambda(profd_bin, pprof, dwarf_build, tmp_path):
    work, rc, err, paths = profile(profd_bin, tmp_path, [dwarf_build("lambda_sort"), RUN],
                                   settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    assert_exact(pprof, paths, err, samples, lambda s: lambda_ok(user_to_main(s["frames"])),
                 "lambda_sort",
                 ["sort_inner(...)::{lambda(int, int)#1}::operator()(int, int) const",
                  "(std:: frames)"] + LAMBDA_CALLERS)
    mids = collections.Counter(len(user_to_main(s["frames"])) - 4 for s in samples
                               if lambda_ok(user_to_main(s["frames"])))
    print("lambda_sort: std:: frames between lambda and sort_inner:", dict(mids))


# --- 10. a binary deleted after start -------------------------------------------

def test_deleted_binary(profd_bin, pprof, dwarf_build, tmp_path):
    exe = tmp_path / "chain-deleted"
    shutil.copy(dwarf_build("chain"), exe)
    exe.chmod(0o755)
    work, rc, err, paths = profile(profd_bin, tmp_path / "out", [str(exe), RUN],
                                   before_profd=lambda w: exe.unlink(), settle=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    assert_exact(pprof, paths, err, samples, is_stack(CHAIN), "deleted binary", CHAIN)


# --- 11. a process started after profd ------------------------------------------

def test_process_started_after_profd(profd_bin, pprof, dwarf_build, tmp_path):
    """profd writes a profile a second; the workload starts 0.5 s after
    profd started sampling. Its samples in every profile after the first
    one that has any (i.e. from at most ~1 s after its first sample on)
    are >= 95 % exact."""
    exe = dwarf_build("chain")
    prof, head = start_profd(profd_bin, tmp_path, "--duration", "5",
                             "--profile-interval", "1")
    time.sleep(0.5)
    work = subprocess.Popen([exe, RUN])
    try:
        rc, err, paths = finish_profd(prof, head, tmp_path)
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    per = [of_pid(pprof, [p], work.pid) for p in paths]
    first = next((i for i, ss in enumerate(per) if ss), None)
    assert first is not None, f"no sample of the new process\n{err}"
    g0, t0 = share(per[first], is_stack(CHAIN))
    print(f"started after profd: first profile with samples: {g0}/{t0} exact")
    later = sum(per[first + 1:], [])
    assert_exact(pprof, paths, err, later, is_stack(CHAIN),
                 "started after profd, from its second profile on", CHAIN)


# --- 12. depth limits ------------------------------------------------------------

def test_recursion_300_with_max_depth_512(profd_bin, pprof, dwarf_build, tmp_path):
    want = ["rec_leaf"] + ["rec"] * 300 + ["main"]
    run_exact(profd_bin, pprof, tmp_path, [dwarf_build("recursion"), RUN, "300"], want,
              "--max-stack-depth", "512", what="recursion 300, --max-stack-depth 512")


@pytest.mark.parametrize("depth,limit", [(300, 100), (600, 512)])
def test_deep_recursion_is_truncated_at_max_depth(profd_bin, pprof, dwarf_build, tmp_path,
                                                   depth, limit):
    """Exactly @limit user frames (the leaf and limit - 1 rec), then the
    "[truncated]" marker. 600/512: the most frames the BPF side walks
    (32 DWARF program runs of 16 frames: the tail-call budget)."""
    want = ["rec_leaf"] + ["rec"] * (limit - 1) + ["[truncated]"]
    run_exact(profd_bin, pprof, tmp_path, [dwarf_build("recursion"), RUN, str(depth)], want,
              "--max-stack-depth", str(limit),
              what=f"recursion {depth}, --max-stack-depth {limit}")


# --- beyond the list: rbp-based CFA (variable-length arrays) and the vDSO -------

def test_rbp_based_frames(profd_bin, pprof, dwarf_build, tmp_path):
    """VLA frames have CFA = rbp + 16 and save the caller's rbp; rsp-based
    frames between them leave rbp alone: rbp must be restored from its save
    slot frame by frame."""
    run_exact(profd_bin, pprof, tmp_path, [dwarf_build("alloca"), RUN],
              ["vla_leaf", "plain_d", "vla_c", "plain_b", "vla_a", "main"])


VD = ["vd_b", "vd_a", "main"]
VDSO_UNNAMED = re.compile(r"^\[vdso\]\+0x([0-9a-f]+)$")


def vdso_image(dest):
    """Copy the running kernel's vDSO (this process's [vdso] mapping: every
    process of the kernel maps the same image) to @dest; return
    (symbols {name: address} from `nm -D`, FDE ranges [(start, end)] from
    `readelf --debug-dump=frames`), as binutils reads them."""
    with open("/proc/self/maps") as f:
        line = next(l for l in f if l.rstrip().endswith("[vdso]"))
    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
    with open("/proc/self/mem", "rb") as mem:
        mem.seek(lo)
        image = mem.read(hi - lo)
    with open(dest, "wb") as f:
        f.write(image)
    nm = subprocess.run(["nm", "-D", "--defined-only", dest], check=True,
                        capture_output=True, text=True).stdout
    syms = {}
    for l in nm.splitlines():
        parts = l.split()
        if len(parts) == 3 and parts[1] in "TtWwi":
            syms[parts[2].split("@")[0]] = int(parts[0], 16)
    frames = subprocess.run(["readelf", "--debug-dump=frames", dest], check=True,
                            capture_output=True, text=True).stdout
    fdes = [(int(a, 16), int(b, 16))
            for a, b in re.findall(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", frames)]
    return syms, fdes


def vdso_split(frames, vdso_names):
    """(the vDSO frames on top, the rest) of a leaf-first user stack of the
    vdso workload: the frames above libc's clock_gettime, vd_b, vd_a, main
    when all are vDSO names (.dynsym or "[vdso]+0x..."); else ([], frames).
    (The vDSO exports "clock_gettime" too: which frame is libc's is known
    only from the chain below it.)"""
    k = len(frames) - len(VD) - 1
    if k > 0 and frames[k:] == ["clock_gettime"] + VD and all(
            f in vdso_names or VDSO_UNNAMED.match(f) for f in frames[:k]):
        return frames[:k], frames[k:]
    return [], frames


def test_vdso_leaf(profd_bin, pprof, dwarf_build, tmp_path):
    """Most samples are in the vDSO (clock_gettime in a tight loop): the
    unwinder needs the vDSO's own .eh_frame (it has no file). What the
    vDSO does inside clock_gettime depends on the kernel build and the
    clock source (under a paravirtualized clock, __vdso_clock_gettime
    calls a static function that .dynsym does not name), so the vDSO part
    of each stack is judged against the kernel's own image and against
    perf --call-graph dwarf sampling the same process at the same time:
    - below the vDSO frames, exactly libc's clock_gettime, vd_b, vd_a,
      main (or vd_b, vd_a, main when the sample hit the libc wrapper);
    - a vDSO frame is a .dynsym name, or "[vdso]+0xSTART" where START
      begins an FDE (readelf) that no symbol names;
    - as many vDSO frames per sample as perf sees (share of samples with
      each count within 15 points): never a second frame for one call.
    profd samples the workload alone (--pid): whole-machine, it would
    also build the unwind tables of perf itself (a million rows) first,
    and the workload's first samples would end at libc's clock_gettime,
    truncated, until its own tables are in."""
    syms, fdes = vdso_image(str(tmp_path / "vdso.so"))
    assert syms and fdes, (syms, fdes)
    work, rc, err, paths, pstacks = profile_with_perf(
        profd_bin, tmp_path, [dwarf_build("vdso"), RUN], dsos=True, only_workload=True)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    fde_starts = {a for a, _ in fdes}
    named_starts = set(syms.values())

    def ok(s):
        top, rest = vdso_split(user_to_main(s["frames"]), set(syms))
        for f in top:
            m = VDSO_UNNAMED.match(f)
            if m and (int(m.group(1), 16) not in fde_starts
                      or int(m.group(1), 16) in named_starts):
                return False
        if top:
            return rest == ["clock_gettime"] + VD
        return rest in (VD, ["clock_gettime"] + VD)

    good, total = assert_exact(pprof, paths, err, samples, ok, "vdso",
                               "[vDSO frames] + ['clock_gettime'] + " + str(VD))
    depth = collections.Counter()
    for s in samples:
        depth[len(vdso_split(user_to_main(s["frames"]), set(syms))[0])] += s["value"]
    pdepth = collections.Counter()
    for st in pstacks:
        k = 0
        while k < len(st) and st[k][1] == "[vdso]":
            k += 1
        pdepth[k] += 1
    ptotal = sum(pdepth.values())
    assert ptotal >= MIN_SAMPLES, f"perf: {ptotal} samples"
    for k in set(depth) | set(pdepth):
        assert abs(depth[k] / total - pdepth[k] / ptotal) <= 0.15, (
            f"samples with {k} vDSO frames: profd {depth[k]}/{total}, perf "
            f"{pdepth[k]}/{ptotal}\nprofd: {sorted(depth.items())}, perf: "
            f"{sorted(pdepth.items())}\n{top_stacks(samples)}")
    in_vdso = total - depth[0]
    assert in_vdso >= 0.5 * total, explain("vdso: samples in the vDSO", in_vdso, total,
                                           samples, pprof, paths, err)
    print(f"vdso: {good}/{total} exact; vDSO frames per sample: profd "
          f"{sorted(depth.items())}, perf {sorted(pdepth.items())}")


def test_vdso_functions_named_by_the_kernels_debug_file(profd_bin, pprof, dwarf_build,
                                                        tmp_path):
    """With the kernel's unstripped vDSO installed where distributions put
    it (/lib/modules/RELEASE/vdso/vdso64.so.dbg, same build ID), its
    .symtab names the static functions .dynsym leaves out. The file is
    made here as the kernel build makes it: the image plus a .symtab
    (objcopy --add-symbol) naming each FDE that no .dynsym symbol names."""
    vdso_dir = f"/lib/modules/{os.uname().release}/vdso"
    if os.path.exists(vdso_dir):
        pytest.skip(f"{vdso_dir} exists: this machine has its own vDSO debug files")
    syms, fdes = vdso_image(str(tmp_path / "vdso.so"))
    local = {f"vdso_local_{a:x}": a for a, _ in fdes if a not in syms.values()}
    dbg = str(tmp_path / "vdso64.so.dbg")
    text = subprocess.run(["readelf", "-SW", str(tmp_path / "vdso.so")], check=True,
                          capture_output=True, text=True).stdout
    text_addr = int(re.search(r"\.text\s+PROGBITS\s+([0-9a-f]+)", text).group(1), 16)
    args = ["objcopy"]
    for name, addr in local.items():
        args += ["--add-symbol", f"{name}=.text:{addr - text_addr:#x},function,local"]
    subprocess.run(args + [str(tmp_path / "vdso.so"), dbg], check=True)
    created = f"/lib/modules/{os.uname().release}"
    made_modules = not os.path.exists(created)
    os.makedirs(vdso_dir)
    try:
        shutil.copy(dbg, vdso_dir)
        work, rc, err, paths = profile(profd_bin, tmp_path / "out", [dwarf_build("vdso"), RUN])
    finally:
        shutil.rmtree(created if made_modules else vdso_dir)
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    names = set(syms) | set(local)
    unnamed = [s for s in samples if any(VDSO_UNNAMED.match(f) for f in s["frames"])]
    assert not unnamed, f"vDSO frames left unnamed with the debug file: {unnamed[:3]}"
    good, total = share(samples, lambda s: vdso_split(user_to_main(s["frames"]), names)[1]
                        in (VD, ["clock_gettime"] + VD))
    assert total >= MIN_SAMPLES and good >= EXACT * total, top_stacks(samples)
    hit = collections.Counter(f for s in samples for f in s["frames"] if f in local)
    print(f"vdso with its debug file: {good}/{total} exact; local functions sampled: "
          f"{dict(hit) or 'none (this kernel runs none of them here)'}")


# --- DWARF is what makes these pass ---------------------------------------------

@pytest.mark.parametrize("name,want", [("chain", CHAIN), ("bigframes", BIG)])
def test_without_dwarf_unwinding_stacks_are_incomplete(profd_bin, pprof, dwarf_build,
                                                       tmp_path, name, want):
    work, rc, err, paths = profile(profd_bin, tmp_path, [dwarf_build(name), RUN],
                                   "--no-dwarf-unwinding")
    assert rc == 0, err
    samples = of_pid(pprof, paths, work.pid)
    good, total = share(samples, is_stack(want))
    assert total >= MIN_SAMPLES, f"too few samples: {total}\n{err}"
    assert good < 0.5 * total, (f"--no-dwarf-unwinding: {good}/{total} exact: the "
                                f"workload keeps frame pointers?\n{top_stacks(samples)}")
    print(f"{name} --no-dwarf-unwinding: {good}/{total} exact")




# --- CFI only in a separate debug file ----------------------------------------

def test_debug_frame_from_separate_debug_file(profd_bin, pprof, tmp_path):
    """Built without unwind tables (-fno-asynchronous-unwind-tables: GCC puts
    the CFI in .debug_frame), then split like a distribution package: the
    installed binary is stripped and its .debug_frame lives only in
    /usr/lib/debug/.build-id/xx/yyyy.debug. profd finds it by build ID."""
    exe, dbg = str(tmp_path / "chain-split"), str(tmp_path / "chain-split.debug")
    subprocess.run(["gcc", *CFLAGS, "-fno-asynchronous-unwind-tables", "-g", "-o", exe,
                    os.path.join(SRC, "chain.c")], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
    subprocess.run(["strip", "--strip-all", exe], check=True)
    sections = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout
    assert ".debug_frame" not in sections
    notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    target = f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy(dbg, target)
    try:
        run_exact(profd_bin, pprof, tmp_path, [exe, RUN], CHAIN,
                  what="chain, CFI in the debug file")
        # without the debug file the same binary is not unwound completely:
        # (names are gone too, so count frames: the chain alone is 6 deep)
        os.unlink(target)
        work, rc, err, paths = profile(profd_bin, tmp_path / "nodebug", [exe, RUN])
        samples = of_pid(pprof, paths, work.pid)
        deep, total = share(samples, lambda s: len(s["frames"]) >= len(CHAIN))
        assert total and deep < 0.5 * total, (deep, total, top_stacks(samples))
    finally:
        if os.path.exists(target):
            os.unlink(target)
