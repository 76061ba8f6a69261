"""Debug files fetched from debuginfod: the real profd against a real
`debuginfod` server (Debian's debuginfod package) run here on localhost,
and against servers that fail: unreachable, slow, hung, lying.

The workload is a C program built here with -g (non-PIE: its code's
addresses are its ELF addresses), its debug file split off with
`objcopy --only-keep-debug` and served by `debuginfod -F`, the binary
itself stripped (--strip-all: no .symtab, no .gnu_debuglink, and no file
under /usr/lib/debug/.build-id): profd can name its functions only from
the file the server sends. Its hot function is static, so not even
.dynsym could name it.

The oracles: Google's pprof reads every profile; a name profd gives a
frame of the workload must be the one `nm` of the unstripped binary gives
that address (a wrong name is worse than an address); the fetched file in
profd's cache must be byte for byte the file the server was given.
Failing servers must cost nothing but the names: profd writes a profile
every second on time (the fetch runs on its own threads), exits on time
(a hung fetch is cancelled), names nothing, counts the failure
(debuginfod_failed / _rejected) and says it in one line; a file of another
build ID, or garbage, is rejected and deleted from the cache.

Needs root (profd), debuginfod and gcc/binutils (scripts/deps.sh --test).
About 2 minutes: ten profd runs of 3-8 s plus their BPF loads.
"""
import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import run_unit, start, stop, unit_program
from pprof_traces import comments, pprof_traces
from test_dwarf import start_profd

DEBUGINFOD = shutil.which("debuginfod", path="/usr/bin:/usr/sbin:" + os.environ.get("PATH", ""))
pytestmark = pytest.mark.skipif(DEBUGINFOD is None, reason="no debuginfod (Debian's debuginfod)")

SRC = r"""
#include <stdio.h>
#include <string.h>

volatile unsigned long sink;

__attribute__((noinline)) static void dbgd_hot_static(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i ^ (sink >> 3);
}

__attribute__((noinline)) void dbgd_middle(unsigned long n)
{
	dbgd_hot_static(n);
	sink ^= n;
}

int main(int argc, char **argv)
{
	/* another build ID for the same code: the lying server's file */
	if (argc > 1 && !strcmp(argv[1], TAG))
		return 1;
	for (;;)
		dbgd_middle(200000);
}
"""
HOT = "dbgd_hot_static"
KERNEL_START = 0xffff800000000000
INTERVAL_SLACK = 0.9    # s a profile may come late (1 s intervals, a busy 2-CPU machine)


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]))
    assert m, f"{path} has no build ID"
    return m.group(1)


def functions(path):
    """[(start, end, name)] of @path's code symbols (nm -n -S), a symbol
    without a size covering up to the next one, as readelf and perf read
    them."""
    syms = []
    for line in run(["nm", "-n", "-S", "--defined-only", path]).splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "TtWw":
            syms.append([int(f[0], 16), int(f[1], 16), f[3]])
        elif len(f) == 3 and f[1] in "TtWw":
            syms.append([int(f[0], 16), 0, f[2]])
    out = []
    for i, (start, size, name) in enumerate(syms):
        end = start + size if size else (syms[i + 1][0] if i + 1 < len(syms) else start + 1)
        out.append((start, max(end, start + 1), name))
    return out


def text_range(path):
    """[start, end) of @path's executable PT_LOAD (readelf -lW)."""
    for line in run(["readelf", "-lW", path]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            start = int(f[2], 16)
            return start, start + int(f[5], 16)
    raise AssertionError(f"no executable segment in {path}")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The workload: stripped binary, its debug file (served), the
    unstripped binary (the oracle), and another program's debug file."""
    d = tmp_path_factory.mktemp("debuginfod")
    served = d / "served"
    served.mkdir()
    (d / "work.c").write_text(SRC)
    out = {}
    for name, tag in (("work", '"--work"'), ("other", '"--other"'), ("stripg", '"--stripg"')):
        full = str(d / f"{name}.full")
        subprocess.run(["gcc", "-O1", "-g", "-fno-pie", "-no-pie", f"-DTAG={tag}",
                        "-o", full, str(d / "work.c")], check=True)
        debug = str((d if name == "other" else served) / f"{name}.debug")
        subprocess.run(["objcopy", "--only-keep-debug", full, debug], check=True)
        out[name] = {"full": full, "debug": debug, "build_id": build_id(full)}
    stripped = str(d / "work")
    subprocess.run(["strip", "--strip-all", "-o", stripped, out["work"]["full"]], check=True)
    # strip -g: the .symtab stays, the DWARF goes (its lines are the server's)
    stripg = str(d / "work-g")
    subprocess.run(["strip", "-g", "-o", stripg, out["stripg"]["full"]], check=True)
    assert ".debug_info" not in run(["readelf", "-SW", stripg])
    sections = run(["readelf", "-SW", stripped])
    assert ".symtab" not in sections and ".gnu_debuglink" not in sections
    assert HOT not in subprocess.run(["nm", "-D", stripped], capture_output=True,
                                     text=True).stdout
    bid = out["work"]["build_id"]
    assert out["other"]["build_id"] != bid
    assert not os.path.exists(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
    return {"exe": stripped, "build_id": bid, "served": str(served),
            "debug": out["work"]["debug"], "other_debug": out["other"]["debug"],
            "text": text_range(stripped),
            "funcs": functions(out["work"]["full"]),
            "stripg": stripg, "stripg_full": out["stripg"]["full"],
            "stripg_build_id": out["stripg"]["build_id"]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    """(status, body) of GET @url; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except OSError:
        return 0, b""


@pytest.fixture(scope="module")
def server(built, tmp_path_factory):
    """A real debuginfod (-F: the ELF/DWARF files of a directory) serving
    the workload's debug file; its URL once it serves it."""
    d = tmp_path_factory.mktemp("debuginfod-server")
    port = free_port()
    log = open(d / "debuginfod.log", "w")
    p = start([DEBUGINFOD, "-F", "-p", str(port), "-d", str(d / "db.sqlite"),
               "-t", "1", "-c", "1", built["served"]], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    want = open(built["debug"], "rb").read()
    try:
        end = time.monotonic() + 60
        while True:     # indexed once it serves the files by build ID
            status, body = http_get(f"{url}/buildid/{built['build_id']}/debuginfo")
            status_g, _ = http_get(f"{url}/buildid/{built['stripg_build_id']}/debuginfo")
            if status == 200 and body == want and status_g == 200:
                break
            assert p.poll() is None, open(d / "debuginfod.log").read()
            assert time.monotonic() < end, "debuginfod never served the debug file:\n" + \
                open(d / "debuginfod.log").read()
            time.sleep(0.2)
        yield url
    finally:
        stop(p)
        log.close()


class FakeServer:
    """A debuginfod stand-in on localhost: @mode "slow" (answers 404 after
    @delay s), "hung" (never answers), "elf" (any build ID: @body, another
    program's debug file), "garbage" (any build ID: @body), "cut" (any
    build ID: the length of @body announced, its first half sent, the
    connection closed), "error" (HTTP 500 for any build ID), "proxy"
    (@delay s, then what @upstream says)."""

    def __init__(self, mode, body=b"", delay=0.0, upstream=None):
        outer = self
        self.requests = 0
        self.stopping = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.requests += 1
                if mode == "hung":
                    outer.stopping.wait(120)
                    return
                if mode in ("slow", "proxy"):
                    outer.stopping.wait(delay)
                status, data = 404, b""
                if mode == "error":
                    status = 500
                if mode in ("elf", "garbage", "cut"):
                    status, data = 200, body
                elif mode == "proxy":
                    status, data = http_get(upstream + self.path)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[:len(data) // 2] if mode == "cut" else data)
                    if mode == "cut":
                        self.close_connection = True
                except OSError:
                    pass    # the client gave up

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class Run:
    """One profd run on the workload: its stderr lines with the time each
    came, its profiles, its counters (summed over the profiles)."""

    def __init__(self, profd_bin, pprof, tmp_path, exe, *args, duration=6, env=None):
        self.cache = str(tmp_path / "cache")
        out = tmp_path / "out"
        work = start([exe])
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            time.sleep(0.3)
            assert work.poll() is None
            prof, head = start_profd(profd_bin, out, "--pid", str(work.pid), "--no-gpu",
                                     "--profile-interval", "1", "--duration", str(duration),
                                     "--debuginfod-cache", self.cache, *args)
            self.t_start = time.monotonic()
            killer = threading.Timer(duration + 60, prof.kill)
            killer.start()
            self.lines = [(self.t_start, l) for l in head.splitlines()]
            for line in prof.stderr:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
            self.rc = prof.wait()
            self.t_end = time.monotonic()
            killer.cancel()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            stop(work)
        self.pid, self.duration = work.pid, duration
        self.err = "\n".join(l for _, l in self.lines)
        self.paths = [m.group(1) for _, l in self.lines
                      for m in [re.match(r"profd: interval \d+: .* wrote (\S+)$", l)] if m]
        self.counters = [self.profile_counters(pprof, p) for p in self.paths]

    @staticmethod
    def profile_counters(pprof, path):
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"(?:stat|partial|lost)\.(\w+)=(\d+)", comments(pprof, path))}

    def total(self, name):
        return sum(c.get(name, 0) for c in self.counters)

    def check_on_time(self):
        """profd ran its course: exit 0, a profile a second, each on time,
        and an exit right after --duration (no fetch held it up)."""
        assert self.rc == 0, self.err
        times = [t for t, l in self.lines if re.match(r"profd: interval \d+: .* wrote ", l)]
        assert len(times) >= self.duration - 1, self.err
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert max(gaps) <= 1 + INTERVAL_SLACK, f"profiles came late: gaps {gaps}\n{self.err}"
        assert self.t_end - self.t_start <= self.duration + 4, \
            f"profd took {self.t_end - self.t_start:.1f} s to stop\n{self.err}"

    def workload_frames(self, pprof, path):
        """The frames (address, name or None) of the workload's own code in
        each of the workload's samples of profile @path, leaf first."""
        lo, hi = self.text
        out = []
        for s in pprof_traces(pprof, path, "-addresses"):
            if s["labels"].get("pid") != str(self.pid):
                continue
            frames, user_leaf = [], True
            for f in s["frames"]:
                parts = f.split(None, 1)
                addr = int(parts[0], 16)
                if addr >= KERNEL_START:
                    continue
                # "ADDR NAME FILE:LINE" when the location has a source line
                name = parts[1].split()[0] if len(parts) > 1 else None
                if name and name.startswith("[") and name.endswith("]"):
                    name = None     # pprof shows an unnamed frame as [mapping]
                if lo <= addr < hi:
                    frames.append((addr, name, user_leaf))
                user_leaf = False
            out.append(frames)
        return out


def oracle_name(built, addr, leaf):
    """nm's function at @addr of the unstripped binary (a return address:
    the call before it, addr - 1)."""
    a = addr if leaf else addr - 1
    for start, end, name in built["funcs"]:
        if start <= a < end:
            return name
    return None


def wrong_names(built, frames):
    return [(hex(a), n, oracle_name(built, a, leaf)) for a, n, leaf in frames
            if n is not None and n != oracle_name(built, a, leaf)]


def profile(profd_bin, pprof, tmp_path, built, *args, **kw):
    r = Run(profd_bin, pprof, tmp_path, built["exe"], *args, **kw)
    r.text = built["text"]
    return r


def test_unit_fetcher():
    """build/tests/unit/test_debuginfod: the URL check, the cache's cap
    (least recently used first), the check of what came, and fetches
    through libdebuginfod from a file:// server (right, lying, garbage,
    missing)."""
    unit_program("test_debuginfod")
    run_unit("test_debuginfod", timeout=120)


def test_fetched_from_debuginfod(profd_bin, pprof, tmp_path, built, server):
    """DEBUGINFOD_URLS names the server: the workload's debug file is
    fetched, cached (the very file served; the cache's 1 MiB cap evicts
    an earlier run's least recently used files) and its functions named,
    each as nm names it; frames left unnamed meanwhile are counted."""
    # an earlier run's files, used long ago: 3 x 512 KiB, past a 1 MiB cap
    old = []
    for i in range(3):
        d = tmp_path / "cache" / (f"{i:02x}" * 20)
        d.mkdir(parents=True)
        (d / "debuginfo").write_bytes(os.urandom(512 << 10))
        os.utime(d / "debuginfo", (1000000 + i, 1000000 + i))
        old.append(str(d / "debuginfo"))
    r = profile(profd_bin, pprof, tmp_path, built, "--debuginfod-cache-size", "1",
                env={"DEBUGINFOD_URLS": server})
    r.check_on_time()
    assert r.total("debuginfod_fetched") == 1, r.err
    # the cap holds: the oldest went first, the fetched file stays
    left = [p for p in old if os.path.exists(p)]
    assert left == old[2:], left
    assert r.total("debuginfod_evicted") == 2, r.err
    assert not r.total("debuginfod_failed") and not r.total("debuginfod_rejected"), r.err
    bid = built["build_id"]
    cached = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(r.cache, bid)) for f in fs]
    assert any(open(p, "rb").read() == open(built["debug"], "rb").read() for p in cached), \
        f"cache {r.cache} does not hold the served file: {cached}"
    named_hot, last = 0, None
    for path, counters in zip(r.paths, r.counters):
        samples = r.workload_frames(pprof, path)
        frames = [f for s in samples for f in s]
        assert not wrong_names(built, frames), (path, wrong_names(built, frames))
        unnamed = [f for f in frames if f[1] is None]
        # an unnamed frame of the workload only while its file was on its
        # way (or the binary itself still being read)
        assert not unnamed or counters.get("symbols_pending_debuginfod") or \
            counters.get("file_pending"), \
            (path, [hex(a) for a, _, _ in unnamed], counters)
        named_hot += sum(1 for s in samples if s and s[0][1] == HOT)
        last = samples
    assert named_hot >= 10, r.err
    # the last profile: every frame of the workload named
    assert last and all(n is not None for s in last for _, n, _ in s), last
    assert any(s and [n for _, n, _ in s][:3] == [HOT, "dbgd_middle", "main"] for s in last), last


def test_flag_off_wins_over_variable(profd_bin, pprof, tmp_path, built, server):
    """--debuginfod-urls "" with DEBUGINFOD_URLS set: nothing is fetched,
    and the stripped workload's own frames stay addresses (the names of
    the test above came from the server)."""
    r = profile(profd_bin, pprof, tmp_path, built, "--debuginfod-urls", "",
                env={"DEBUGINFOD_URLS": server}, duration=3)
    assert r.rc == 0, r.err
    assert not r.total("debuginfod_fetched") and "debuginfod:" not in r.err, r.err
    frames = [f for p in r.paths for s in r.workload_frames(pprof, p) for f in s]
    assert frames and all(n is None for _, n, _ in frames), frames[:10]
    assert not os.path.exists(os.path.join(r.cache, built["build_id"]))


def test_names_wait_for_a_slow_fetch(profd_bin, pprof, tmp_path, built, server):
    """A server that takes 3 s (a proxy in front of the real one), given
    by the flag: the intervals before the file came keep the workload's
    addresses and count them (symbols_pending_debuginfod, also in the
    status line); those after name them."""
    with FakeServer("proxy", delay=3, upstream=server) as fake:
        r = profile(profd_bin, pprof, tmp_path, built, "--debuginfod-urls", fake.url,
                    duration=7)
    r.check_on_time()
    assert r.total("debuginfod_fetched") == 1, r.err
    pending = [c.get("symbols_pending_debuginfod", 0) for c in r.counters]
    assert max(pending[:2]) > 0 and pending[-1] == 0, (pending, r.err)
    assert re.search(r"partial events \(.*symbols_pending_debuginfod=\d+", r.err), r.err
    first = r.workload_frames(pprof, r.paths[0])
    assert first and all(n is None for s in first for _, n, _ in s), first
    last = r.workload_frames(pprof, r.paths[-1])
    assert any(s and s[0][1] == HOT for s in last), last
    for p in r.paths:
        frames = [f for s in r.workload_frames(pprof, p) for f in s]
        assert not wrong_names(built, frames), (p, wrong_names(built, frames))


def bad_server(mode, built):
    if mode == "unreachable":
        return None
    if mode == "elf":
        return FakeServer("elf", body=open(built["other_debug"], "rb").read())
    if mode == "garbage":
        return FakeServer("garbage", body=os.urandom(64 << 10))
    if mode == "truncated":     # the right file, cut in half: no section headers
        data = open(built["debug"], "rb").read()
        return FakeServer("elf", body=data[:len(data) // 2])
    if mode == "cut":           # the right file announced, half of it sent
        return FakeServer("cut", body=open(built["debug"], "rb").read())
    if mode == "huge":          # past the 1 MiB cap the run sets
        return FakeServer("garbage", body=b"\0" * (8 << 20))
    if mode == "error":
        return FakeServer("error")
    return FakeServer(mode, delay=30)


@pytest.mark.parametrize("mode,counter", [
    ("unreachable", "debuginfod_failed"),
    ("slow", "debuginfod_failed"),
    ("elf", "debuginfod_rejected"),
    ("garbage", "debuginfod_rejected"),
    ("truncated", "debuginfod_rejected"),
    ("cut", "debuginfod_failed"),
    ("huge", "debuginfod_failed"),
    ("error", "debuginfod_server_errors"),
    ("hung", None),
])
def test_bad_server(profd_bin, pprof, tmp_path, built, mode, counter):
    """A server that refuses connections, answers after the timeout
    (DEBUGINFOD_TIMEOUT=1, honoured), sends another program's debug file,
    garbage, the right file truncated, the right file cut off mid-transfer
    (a failed fetch, asked again soon: libdebuginfod says "not found" and
    leaves a miss marker), or 8 MiB past the 1 MiB cap for any
    build ID, answers HTTP 500 (a server error, not a miss: libdebuginfod
    says "not found" for both), or never answers (profd stops anyway: the
    fetch is cancelled): profd keeps writing a profile a second,
    exits on time, names none of the workload's frames, counts the
    failure and says it in one line; a rejected file leaves the cache.
    A server error or a cancelled fetch leaves no miss marker for the next
    run (libdebuginfod would answer "not found" from it for 10 minutes)."""
    fake = bad_server(mode, built)
    url = fake.url if fake else f"http://127.0.0.1:{free_port()}"
    env = {"DEBUGINFOD_TIMEOUT": "1", "DEBUGINFOD_RETRY_LIMIT": "0"} if mode == "slow" else {}
    if fake:
        fake.__enter__()
    try:
        r = profile(profd_bin, pprof, tmp_path, built, "--debuginfod-urls", url,
                    "--debuginfod-cache-size", "1", duration=5, env=env)
    finally:
        if fake:
            fake.__exit__(None, None, None)
    r.check_on_time()
    if fake:
        assert fake.requests >= 1, r.err
    frames = [f for p in r.paths for s in r.workload_frames(pprof, p) for f in s]
    assert frames and all(n is None for _, n, _ in frames), [f for f in frames if f[1]][:10]
    assert not r.total("debuginfod_fetched"), r.err
    if counter:
        assert r.total(counter) >= 1, r.err
        assert re.search(rf"profd: warning: debuginfod: build ID {built['build_id']}: ", r.err), \
            r.err
        # after the failure its frames say why they have no names
        assert r.total("symbols_debuginfod_missing") >= 1, r.err
    bid_dir = os.path.join(r.cache, built["build_id"])
    files = [f for _, _, fs in os.walk(bid_dir) for f in fs] if os.path.isdir(bid_dir) else []
    sizes = [os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(bid_dir) for f in fs]
    assert not any(sizes), f"a file of {mode} server stayed in the cache: {files} {sizes}"
    if mode in ("hung", "error", "cut"):    # no miss remembered for the next run
        assert not files, files
    if mode in ("error", "cut"):
        assert not r.total("debuginfod_not_found"), r.err


def test_strip_g_lines_from_debuginfod(profd_bin, pprof, tmp_path, built, server):
    """A binary stripped with `strip -g` keeps its .symtab (named at once)
    but lost its DWARF: its debug file is fetched all the same, for the
    lines, and once it came every location of the workload carries the
    file:line (and inlined functions) `addr2line -f -i` gives on the
    unstripped binary. Its frames are never counted as waiting for names."""
    from pprof_traces import pprof_raw_samples
    from test_native_lines import addr2line
    exe = built["stripg"]
    r = Run(profd_bin, pprof, tmp_path, exe, duration=6, env={"DEBUGINFOD_URLS": server})
    assert r.rc == 0, r.err
    assert r.total("debuginfod_fetched") == 1, r.err
    assert not r.total("symbols_pending_debuginfod"), r.err
    lo, hi = text_range(exe)
    last = None
    for path in r.paths:
        locs = {}
        for smp in pprof_raw_samples(pprof, path):
            if smp["labels"].get("pid") != str(r.pid):
                continue
            user, prev = [], None
            for f in smp["frames"]:
                if f["address"] >= KERNEL_START or f["loc"] == prev:
                    continue
                prev = f["loc"]
                user.append(f)
            for i, f in enumerate(user):
                if lo <= f["address"] < hi:
                    a = f["address"] if i == 0 else f["address"] - 1
                    locs[a] = [(g["function"], os.path.basename(g["file"]), g["line"])
                               for g in smp["frames"] if g["loc"] == f["loc"]]
        # named from the first profile on: the .symtab is its own
        assert all(ln and ln[-1][0] for ln in locs.values()), (path, locs)
        if locs:
            last = locs
    assert last, r.err
    want = addr2line(built["stripg_full"], list(last))
    bad = {hex(a): (got, want[a]) for a, got in last.items() if want[a] and got != want[a]}
    assert not bad, f"profd vs addr2line -i: {bad}\n{r.err}"
    assert any(ln[0][0] == HOT and ln[0][2] > 0 for ln in last.values()), last


def test_bad_cached_file_fetched_again(profd_bin, pprof, tmp_path, built, server):
    """The cache holds another program's debug file under the workload's
    build ID (an earlier run's, a disk fault): libdebuginfod hands it out
    without asking the server; profd rejects it, deletes it and fetches the
    real one at once (not 10 minutes later), and names the workload."""
    bid = built["build_id"]
    cached = tmp_path / "cache" / bid / "debuginfo"
    cached.parent.mkdir(parents=True)
    shutil.copy(built["other_debug"], cached)
    r = profile(profd_bin, pprof, tmp_path, built, env={"DEBUGINFOD_URLS": server})
    r.check_on_time()
    assert r.total("debuginfod_rejected") == 1, r.err
    assert r.total("debuginfod_fetched") == 1, r.err
    assert open(cached, "rb").read() == open(built["debug"], "rb").read()
    last = r.workload_frames(pprof, r.paths[-1])
    assert any(s and s[0][1] == HOT for s in last), (last, r.err)
    for p in r.paths:
        frames = [f for s in r.workload_frames(pprof, p) for f in s]
        assert not wrong_names(built, frames), (p, wrong_names(built, frames))
