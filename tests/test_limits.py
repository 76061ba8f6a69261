"""BPF map limits, the verifier log and per-sample debug output, on the real
profd: --bpf-map-scale-factor (map sizes read back with bpftool from the maps
the running profd holds; a memory cgroup too small for the asked sizes;
a small MemAvailable; --no-gpu leaves the GPU ringbuf unscaled; the
unwind memory limit /metrics reports),
--bpf-verifier-log-level (quiet on a good load; the log of a program the
verifier rejects: build/tests/unit/test_verifier_log), --debug-pid (only
the chosen process, frames placed in its executable at the right file
offsets, checked against readelf). Needs root, like profd itself."""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import BUILD, ROOT, cgroup_hierarchy, map_ids, mount_ns_argv
from pprof_traces import pprof_traces

MIB = 1 << 20


@pytest.fixture(scope="session")
def chain_bin(tmp_path_factory):
    """tests/workloads/chain.c: main -> chain_a .. chain_e, spinning."""
    out = str(tmp_path_factory.mktemp("limits") / "chain")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", out,
                    os.path.join(ROOT, "tests", "workloads", "chain.c")], check=True)
    return out


def bpf_maps_of(pid):
    """{map name: max_entries} of the BPF maps process @pid holds (its fds,
    then bpftool), so other profd runs on the machine do not count."""
    ids = map_ids(pid)
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                         text=True, check=True).stdout
    return {m["name"]: m["max_entries"] for m in json.loads(out) if m["id"] in ids}


def wait_for_maps(proc, names, timeout=20):
    """The maps of running @proc once all of @names exist and the skeleton
    is loaded (libbpf made unwind_scratch; the maps sized before it and
    the memory held back meanwhile are gone)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        maps = bpf_maps_of(proc.pid)
        if all(n in maps for n in [*names, "unwind_scratch"]) and \
                "profd_headroom" not in maps:
            return maps
        time.sleep(0.2)
    raise AssertionError(f"maps {names} never appeared (profd rc={proc.poll()})")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(text, name, label):
    m = re.search(r"^%s\{ringbuf=\"%s\"\} (\d+)$" % (name, label), text, re.M)
    return int(m.group(1)) if m else None


def workload_samples(pprof, outdir, pid):
    n = 0
    for p in sorted(glob.glob(os.path.join(str(outdir), "cpu-*.pb.gz"))):
        n += sum(s["value"] for s in pprof_traces(pprof, p)
                 if s["labels"].get("pid") == str(pid))
    return n


def stop(*procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


# --- --bpf-map-scale-factor ------------------------------------------------

@pytest.mark.parametrize("factor", [0, 3])
def test_scale_factor_sizes_the_maps(profd_bin, pprof, chain_bin, tmp_path, factor):
    port = free_port()
    work = subprocess.Popen([chain_bin, "10"])
    profd = subprocess.Popen([profd_bin, "--duration", "4", "--sampling-frequency", "99",
                              "--bpf-map-scale-factor", str(factor),
                              "--http-address", f"127.0.0.1:{port}",
                              "--output-dir", str(tmp_path)],
                             stderr=subprocess.PIPE, text=True)
    try:
        maps = wait_for_maps(profd, ["events", "cupti_events", "runtime_threads",
                                     "dl_events", "exec_times", "unwind_procs",
                                     "runtime_procs"])
        metrics = ""
        for _ in range(50):     # /metrics answers before the tracer is up
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                        timeout=5) as r:
                metrics = r.read().decode()
            if re.search(r"^profd_up 1$", metrics, re.M):
                break
            time.sleep(0.1)
        _, err = profd.communicate(timeout=60)
    finally:
        stop(profd, work)
    assert profd.returncode == 0, err
    scale = 1 << factor
    # every per-process/per-thread map and both ringbufs x 2^N ...
    assert maps["events"] == 8 * MIB * scale, maps
    assert maps["cupti_events"] == 8 * MIB * scale, maps
    assert maps["runtime_threads"] == 16384 * scale, maps
    assert maps["dl_events"] == 16384 * scale, maps
    assert maps["exec_times"] == 16384 * scale, maps
    assert maps["unwind_procs"] == 8192 * scale, maps
    assert maps["runtime_procs"] == 8192 * scale, maps
    # ... per-CPU scratch (a slot per program type), counters and the PID filter not
    assert maps["unwind_scratch"] == 3 and maps["pid_filter"] == 1024, maps
    assert "cannot be created" not in err, err
    # tracer_ringbuf_usage() through /metrics: the live sizes, a sane fill
    for name in ("events", "cupti_events"):
        size = metric(metrics, "profd_ringbuf_size_bytes", name)
        used = metric(metrics, "profd_ringbuf_used_bytes", name)
        assert size == 8 * MIB * scale, metrics
        # records are 8-byte aligned: so are both positions
        assert used is not None and 0 <= used <= size and used % 8 == 0, metrics
    assert workload_samples(pprof, tmp_path, work.pid) >= 100, err


def scrape_when_up(port, profd, timeout=30):
    """/metrics of @profd once profd_up is 1 (it answers before the load)."""
    deadline = time.time() + timeout
    while time.time() < deadline and profd.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                        timeout=5) as r:
                text = r.read().decode()
        except OSError:
            text = ""
        if re.search(r"^profd_up 1$", text, re.M):
            return text
        time.sleep(0.1)
    raise AssertionError(f"profd_up never 1 (profd rc={profd.poll()})")


def test_no_gpu_keeps_the_gpu_ringbuf_unscaled(profd_bin, tmp_path):
    """--no-gpu: nothing writes cupti_events, so factor 8 scales the CPU
    ringbuf and leaves the GPU one at its one-page size."""
    port = free_port()
    profd = subprocess.Popen([profd_bin, "--duration", "3", "--no-gpu",
                              "--bpf-map-scale-factor", "8",
                              "--http-address", f"127.0.0.1:{port}",
                              "--output-dir", str(tmp_path)],
                             stderr=subprocess.PIPE, text=True)
    try:
        maps = wait_for_maps(profd, ["events", "cupti_events"])
        metrics = scrape_when_up(port, profd)
        _, err = profd.communicate(timeout=60)
    finally:
        stop(profd)
    assert profd.returncode == 0, err
    page = os.sysconf("SC_PAGE_SIZE")
    assert maps["cupti_events"] == page, maps
    assert metric(metrics, "profd_ringbuf_size_bytes", "cupti_events") == page, metrics
    assert "cupti_events" not in err, err
    # the CPU ringbuf x 2^8, or as much of it as the machine allows (warned)
    if "BPF map events:" in err:
        assert 8 * MIB < maps["events"] < 2048 * MIB, (maps, err)
    else:
        assert maps["events"] == 2048 * MIB, maps


def test_scaled_maps_grow_by_half_of_memavailable(profd_bin, tmp_path):
    """Without a memory cgroup limit the kernel refuses nothing short of the
    machine's memory: the scaled maps grow, in order, by at most half of
    MemAvailable (here 1 GiB, a /proc/meminfo bind-mounted in a private
    mount namespace), and each that got less says so."""
    with open("/proc/meminfo") as f:
        fake = re.sub(r"^MemAvailable:.*$", "MemAvailable:    1048576 kB", f.read(),
                      flags=re.M)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(fake)
    script = f'mount --bind {meminfo} /proc/meminfo && exec "$0" "$@"'
    profd = subprocess.Popen(mount_ns_argv(script, profd_bin,
                                           "--duration", "2", "--bpf-map-scale-factor", "8",
                                           "--output-dir", str(tmp_path / "out")),
                             stderr=subprocess.PIPE, text=True)
    try:
        maps = wait_for_maps(profd, ["events", "cupti_events", "runtime_threads",
                                     "dl_events", "unwind_procs", "runtime_procs"])
        _, err = profd.communicate(timeout=60)
    finally:
        stop(profd)
    assert profd.returncode == 0, err
    # events first: 8 MiB + 504 MiB of the 512 MiB; cupti_events the rest
    assert maps["events"] == 512 * MIB, (maps, err)
    assert maps["cupti_events"] == 16 * MIB, (maps, err)
    # nothing left for the tables: unscaled
    assert maps["runtime_threads"] == 16384 and maps["unwind_procs"] == 8192, maps
    warned = re.findall(r"^profd: warning: BPF map (\w+): \S+ \S+ is over the memory "
                        r"budget \(half of MemAvailable\); using .*$", err, re.M)
    assert sorted(warned) == sorted(["events", "cupti_events", "runtime_threads",
                                     "dl_events", "exec_times", "unwind_procs",
                                     "runtime_procs"]), err


@pytest.mark.parametrize("factor,args,limit_mib", [
    (0, [], 64),
    (1, [], 128),                                   # the default x 2^1
    (1, ["--unwind-memory-limit", "32"], 32),       # given: not scaled
    (1, ["--no-dwarf-unwinding"], 0),
])
def test_unwind_memory_limit_metric(profd_bin, tmp_path, factor, args, limit_mib):
    """profd_unwind_memory_limit_bytes is the limit in effect: the default
    --unwind-memory-limit x 2^--bpf-map-scale-factor unless it was given."""
    port = free_port()
    profd = subprocess.Popen([profd_bin, "--duration", "2", *args,
                              "--bpf-map-scale-factor", str(factor),
                              "--http-address", f"127.0.0.1:{port}",
                              "--output-dir", str(tmp_path)],
                             stderr=subprocess.PIPE, text=True)
    try:
        metrics = scrape_when_up(port, profd)
        _, err = profd.communicate(timeout=60)
    finally:
        stop(profd)
    assert profd.returncode == 0, err
    m = re.search(r"^profd_unwind_memory_limit_bytes (\d+)$", metrics, re.M)
    assert m and int(m.group(1)) == limit_mib * MIB, metrics


def test_memory_cgroup_too_small_falls_back(profd_bin, pprof, chain_bin, tmp_path):
    """Factor 8 asks for two 2 GiB ringbufs and a 1 GiB unwind-table
    default; in a 300 MiB memory cgroup (BPF memory is charged to it)
    profd reads its cgroup's room, warns, makes the maps and the unwind
    limit smaller, stays well under the limit (a cgroup filled to it by
    maps the kernel still took got profd OOM-killed on its next page
    fault, 1 run in 3) and profiles."""
    with cgroup_hierarchy(tmp_path / "cgroup-memory", False, "memory") as memory:
        memory_cgroup_too_small(profd_bin, pprof, chain_bin, tmp_path, memory)


def memory_cgroup_too_small(profd_bin, pprof, chain_bin, tmp_path, memory):
    """test_memory_cgroup_too_small_falls_back in the v1 memory hierarchy
    mounted at @memory."""
    if not os.path.exists(os.path.join(memory, "memory.limit_in_bytes")):
        pytest.skip("no cgroup-v1 memory controller at " + memory)
    cg = os.path.join(memory, f"profd-test-{os.getpid()}")
    os.mkdir(cg)
    work = profd = None
    try:
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write("300M")
        work = subprocess.Popen([chain_bin, "10"])
        script = f'echo $$ > {cg}/cgroup.procs && exec "$0" "$@"'
        profd = subprocess.Popen(["sh", "-c", script, profd_bin, "--duration", "4",
                                  "--sampling-frequency", "99",
                                  "--bpf-map-scale-factor", "8",
                                  "--output-dir", str(tmp_path)],
                                 stderr=subprocess.PIPE, text=True)
        maps = wait_for_maps(profd, ["events", "cupti_events"])
        _, err = profd.communicate(timeout=60)
        with open(os.path.join(cg, "memory.oom_control")) as f:
            oom = f.read()
        with open(os.path.join(cg, "memory.max_usage_in_bytes")) as f:
            peak = int(f.read())
    finally:
        stop(*[p for p in (profd, work) if p])
        os.rmdir(cg)
    assert profd.returncode == 0, err
    assert re.search(r"^oom_kill 0$", oom, re.M), oom
    # the cgroup's room beyond --memory-limit 160 and the unwind limit
    # bounds the maps' growth (the kernel's refusal is the fallback where
    # profd cannot read its cgroup)
    why = (r"(is over the memory budget \(half of the memory cgroup's room "
           r"beyond --memory-limit and --unwind-memory-limit\)|cannot be created "
           r"\(Cannot allocate memory\))")
    m = re.search(r"^profd: warning: BPF map events: 2048 MiB %s; using (\d+) MiB$"
                  % why, err, re.M)
    assert m, err
    got = int(m.group(2))
    assert 8 <= got < 2048, err
    assert maps["events"] == got * MIB, (maps, err)
    # one line per map that got less, each naming both sizes
    warned = re.findall(r"^profd: warning: BPF map (\w+): .* %s; using .*$" % why,
                        err, re.M)
    assert len(warned) == len(set(x[0] for x in warned)), err
    assert "cupti_events" in [x[0] for x in warned], err
    assert maps["cupti_events"] < 2048 * MIB, maps
    m = re.search(r"^profd: warning: --unwind-memory-limit: 1024 MiB \(the default at "
                  r"--bpf-map-scale-factor 8\) is more than half of the memory cgroup's "
                  r"room beyond --memory-limit \(room (\d+) MiB, --memory-limit 160 MiB\); "
                  r"using (\d+) MiB$", err, re.M)
    assert m and 64 <= int(m.group(2)) <= (int(m.group(1)) - 160) // 2 + 1, err
    # what is left fits: no warning that the limits are over the room
    assert "more than the memory cgroup's room" not in err, err
    # what profd took at its peak left the cgroup room to spare
    assert peak < 250 * MIB, (peak >> 20, err)
    assert workload_samples(pprof, tmp_path, work.pid) >= 100, err


def test_memory_limit_over_the_cgroup_is_warned(profd_bin, tmp_path):
    """--memory-limit 400 in a 300 MiB memory cgroup: profd's caches would
    shed only after the kernel OOM-killed it; one warning line says so,
    naming the limits and the room, and profd runs."""
    with cgroup_hierarchy(tmp_path / "cgroup-memory", False, "memory") as memory:
        if not os.path.exists(os.path.join(memory, "memory.limit_in_bytes")):
            pytest.skip("no cgroup-v1 memory controller at " + memory)
        cg = os.path.join(memory, f"profd-test-over-{os.getpid()}")
        os.mkdir(cg)
        try:
            with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
                f.write("300M")
            script = f'echo $$ > {cg}/cgroup.procs && exec "$0" "$@"'
            r = subprocess.run(["sh", "-c", script, profd_bin, "--duration", "1",
                                "--memory-limit", "400", "--output-dir", str(tmp_path / "o")],
                               capture_output=True, text=True, timeout=60)
        finally:
            os.rmdir(cg)
    assert r.returncode == 0, r.stderr
    warned = [l for l in r.stderr.splitlines() if "more than the memory cgroup's room" in l]
    assert len(warned) == 1, r.stderr
    m = re.search(r"^profd: warning: --memory-limit 400 MiB, --unwind-memory-limit 64 MiB "
                  r"and (\d+) MiB of ring buffers are more than the memory cgroup's room "
                  r"\((\d+) MiB\)", warned[0])
    assert m and 250 <= int(m.group(2)) <= 300, warned


# --- --bpf-verifier-log-level ----------------------------------------------

def test_verifier_log_of_a_rejected_program():
    """A program the verifier rejects, loaded by the tracer's own loading
    code: nothing at level 0, the level-1 log at 1, the level-2 log (of a
    second load of that program alone) at 2; a good load prints nothing."""
    binary = os.path.join(BUILD, "tests", "unit", "test_verifier_log")
    assert os.access(binary, os.X_OK), "build/tests/unit/test_verifier_log missing: run make"
    proc = subprocess.run([binary], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout, proc.stdout


def test_verifier_log_level_2_is_quiet_when_programs_load(profd_bin, tmp_path):
    """Level 2 costs nothing on a good load: no log is asked of the kernel
    (every program at BPF_LOG_LEVEL2 takes minutes) and none is printed."""
    lines = {}
    for level in ("0", "2"):
        start = time.time()
        proc = subprocess.run([profd_bin, "--duration", "1",
                               "--bpf-verifier-log-level", level,
                               "--output-dir", str(tmp_path / level)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert time.time() - start < 20, "level %s: slow start" % level
        lines[level] = [re.sub(r"\d+", "N", l.split(":")[1])
                        for l in proc.stderr.splitlines()]
    assert lines["2"] == lines["0"], lines
    assert not any("verifier log" in l or "libbpf" in l for l in lines["2"]), lines


# --- --debug-pid -------------------------------------------------------------

DEBUG_HEADER = re.compile(r"^profd: debug: sample pid=(\d+) tid=(\d+) comm=(\S*) cpu=\d+ "
                          r"origin=(\S+) unwinder=(\S+) flags=(\S+) kernel=(\d+) user=(\d+) ")
DEBUG_FRAME = re.compile(r"^  #(\d+)\s+(kernel|user|python)\s+0x([0-9a-f]+) (.*)$")
USER_WHERE = re.compile(r"^(.*)\+0x([0-9a-f]+)(?: (\S+))?$")


def debug_blocks(stderr):
    """[{pid, unwinder, flags, nkernel, nuser, frames: [(kind, addr, rest)]}]"""
    blocks = []
    for line in stderr.splitlines():
        m = DEBUG_HEADER.match(line)
        if m:
            blocks.append({"pid": int(m.group(1)), "unwinder": m.group(5),
                           "flags": m.group(6), "nkernel": int(m.group(7)),
                           "nuser": int(m.group(8)), "frames": []})
            continue
        m = DEBUG_FRAME.match(line)
        if m and blocks:
            blocks[-1]["frames"].append((m.group(2), int(m.group(3), 16), m.group(4)))
    return blocks


def elf_functions(path):
    """[(file offset start, end, name)] of the FUNC symbols of ELF @path."""
    loads = []
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # off, vaddr, filesz
    funcs = []
    for line in subprocess.run(["readelf", "-sW", path], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND" and int(f[2], 0) > 0:
            vaddr, size = int(f[1], 16), int(f[2], 0)
            for off, va, filesz in loads:
                if va <= vaddr < va + filesz:
                    funcs.append((vaddr - va + off, vaddr - va + off + size, f[7]))
    return funcs


def test_debug_pid_prints_that_process_only(profd_bin, pprof, chain_bin, tmp_path):
    a = subprocess.Popen([chain_bin, "10"])
    b = subprocess.Popen([chain_bin, "10"])
    try:
        time.sleep(0.5)
        proc = subprocess.run([profd_bin, "--duration", "3", "--sampling-frequency", "99",
                               "--debug-pid", str(a.pid), "--output-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
    finally:
        stop(a, b)
    assert proc.returncode == 0, proc.stderr[-3000:]
    blocks = debug_blocks(proc.stderr)
    assert len(blocks) >= 50, proc.stderr[-3000:]
    assert {blk["pid"] for blk in blocks} == {a.pid}
    # the other busy process was sampled all the same
    assert workload_samples(pprof, tmp_path, b.pid) >= 50

    funcs = elf_functions(chain_bin)
    want = ["chain_e", "chain_d", "chain_c", "chain_b", "chain_a", "main"]
    good = 0
    for blk in blocks:
        assert len(blk["frames"]) == blk["nkernel"] + blk["nuser"], blk
        assert blk["unwinder"] in ("dwarf", "fp"), blk
        names, leaf = [], True
        for kind, addr, rest in blk["frames"]:
            if kind != "user":
                continue
            m = USER_WHERE.match(rest)
            assert m, rest
            if m.group(1) == chain_bin:
                off = int(m.group(2), 16)
                look = off if leaf else off - 1     # a return address: its call
                fn = [n for s, e, n in funcs if s <= look < e]
                assert fn, (rest, blk)
                if m.group(3):                      # the name printed, if any, agrees
                    assert m.group(3) == fn[0], (rest, fn)
                names.append(fn[0])
            leaf = False
        if "main" in names and names[:names.index("main") + 1] == want:
            good += 1
    assert good >= 0.9 * len(blocks), (good, len(blocks), blocks[:3])


@pytest.mark.parametrize("args,needle", [
    (["--bpf-map-scale-factor", "9"], "--bpf-map-scale-factor"),
    (["--bpf-map-scale-factor", "-1"], "--bpf-map-scale-factor"),
    (["--bpf-verifier-log-level", "3"], "--bpf-verifier-log-level"),
    (["--debug-pid", "abc"], "--debug-pid"),
    (["--debug-pid", "0"], "--debug-pid"),
])
def test_bad_values_are_usage_errors(profd_bin, tmp_path, args, needle):
    proc = subprocess.run([profd_bin, *args, "--duration", "1",
                           "--output-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 64, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("profd: ") and needle in first, proc.stderr
    # the error line, then argp's pointer to --help
    assert len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
    assert not os.path.exists(tmp_path / "flamegraph.html")
