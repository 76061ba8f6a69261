"""/metrics and /healthz (--http-address, issue 7 "self-metrics").

The unit program tests/unit/test_metrics.c covers the text writer and the
HTTP server (parsing, 404/405, slow clients, limits, IPv6). Here a real
profd samples a busy workload with --http-address 127.0.0.1:0; /metrics is
fetched twice and read with a strict parser of the Prometheus text format
0.0.4 written for this test (no promtool, no prometheus_client): the text
must follow the format, counters must not go back and the busy ones must
move, gauges must be sane, and every lost.NAME of a written profile's
comments (read with Google's pprof) must be a reason label. Needs root,
like profd itself.
"""
import glob
import math
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import BUILD, ROOT
from pprof_traces import comments

UNIT = os.path.join(BUILD, "tests", "unit", "test_metrics")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# --- a strict reader of the text exposition format 0.0.4 --------------------

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class ExpositionError(AssertionError):
    pass


def _unescape(s, quote, where):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s):
                raise ExpositionError(f"dangling backslash: {where}")
            n = s[i + 1]
            if n == "\\":
                out.append("\\")
            elif n == "n":
                out.append("\n")
            elif n == '"' and quote:
                out.append('"')
            else:
                raise ExpositionError(f"bad escape \\{n}: {where}")
            i += 2
            continue
        if c == "\n" or (c == '"' and quote):
            raise ExpositionError(f"unescaped {c!r}: {where}")
        out.append(c)
        i += 1
    return "".join(out)


def _value(s, where):
    if s == "NaN":
        return math.nan
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if not FLOAT_RE.match(s):
        raise ExpositionError(f"bad value {s!r}: {where}")
    return float(s)


def _labels(line, i, where):
    """Parse '{a="x",b="y"}' from line[i] == '{'; returns (dict, next index)."""
    labels = {}
    i += 1
    while True:
        if line[i:i + 1] == "}":
            return labels, i + 1
        m = LABEL_RE.match(line, i)
        if not m:
            raise ExpositionError(f"bad label name at {i}: {where}")
        name = m.group(0)
        i = m.end()
        if line[i:i + 2] != '="':
            raise ExpositionError(f"expected =\" after {name}: {where}")
        i += 2
        j = i
        while j < len(line) and line[j] != '"':
            j += 2 if line[j] == "\\" else 1
        if j >= len(line):
            raise ExpositionError(f"unterminated label value: {where}")
        if name in labels:
            raise ExpositionError(f"label {name} twice: {where}")
        if name.startswith("__"):
            raise ExpositionError(f"reserved label name {name}: {where}")
        labels[name] = _unescape(line[i:j], True, where)
        i = j + 1
        if line[i:i + 1] == ",":
            i += 1
        elif line[i:i + 1] != "}":
            raise ExpositionError(f"expected , or }} after a label: {where}")


def parse_exposition(text):
    """Families of @text: {name: {"type", "help", "samples": {labels: value}}}
    where labels is a sorted tuple of (name, value). Raises ExpositionError
    on anything the 0.0.4 format does not allow."""
    if text and not text.endswith("\n"):
        raise ExpositionError("the last line does not end in a newline")
    fams, order, current = {}, [], None

    def fam(name):
        if name not in fams:
            fams[name] = {"type": None, "help": None, "samples": {}}
            order.append(name)
        return fams[name]

    for n, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        where = f"line {n}: {line!r}"
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                if len(parts) < 3 or not NAME_RE.fullmatch(parts[2]):
                    raise ExpositionError(f"bad metric name: {where}")
                f = fam(parts[2])
                if f["samples"]:
                    raise ExpositionError(f"{parts[1]} after the samples: {where}")
                if parts[1] == "HELP":
                    if f["help"] is not None:
                        raise ExpositionError(f"second HELP: {where}")
                    head = f"# HELP {parts[2]}"
                    rest = line[len(head) + 1:] if len(line) > len(head) else ""
                    if not line.startswith(head):
                        raise ExpositionError(f"bad HELP spacing: {where}")
                    f["help"] = _unescape(rest, False, where)
                else:
                    if f["type"] is not None:
                        raise ExpositionError(f"second TYPE: {where}")
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise ExpositionError(f"bad TYPE: {where}")
                    f["type"] = parts[3]
            continue  # any other comment
        m = NAME_RE.match(line)
        if not m:
            raise ExpositionError(f"bad sample name: {where}")
        name, i = m.group(0), m.end()
        labels = {}
        if line[i:i + 1] == "{":
            labels, i = _labels(line, i, where)
        if line[i:i + 1] != " ":
            raise ExpositionError(f"expected a space before the value: {where}")
        fields = line[i:].split()
        if len(fields) not in (1, 2):
            raise ExpositionError(f"expected VALUE [TIMESTAMP]: {where}")
        value = _value(fields[0], where)
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            raise ExpositionError(f"bad timestamp: {where}")
        # no histograms/summaries here: a sample's family is its name
        if name != current and name in fams and fams[name]["samples"]:
            raise ExpositionError(f"samples of {name} are not together: {where}")
        current = name
        f = fam(name)
        key = tuple(sorted(labels.items()))
        if key in f["samples"]:
            raise ExpositionError(f"duplicate series: {where}")
        f["samples"][key] = value
    return fams


def check_profd_rules(fams):
    """What profd promises beyond the format: HELP and TYPE for every
    family, counters named *_total with finite values >= 0."""
    for name, f in fams.items():
        assert f["type"] in ("counter", "gauge"), (name, f["type"])
        assert f["help"], f"{name}: no HELP"
        assert f["samples"], f"{name}: a family without samples"
        if f["type"] == "counter":
            assert name.endswith("_total"), name
            for v in f["samples"].values():
                assert math.isfinite(v) and v >= 0, (name, v)


def one(fams, family, **labels):
    """The value of the series @family{@labels}; it must exist."""
    key = tuple(sorted(labels.items()))
    assert family in fams, f"{family} missing: {sorted(fams)}"
    assert key in fams[family]["samples"], (family, key, fams[family]["samples"])
    return fams[family]["samples"][key]


def label_values(fams, name, label):
    return {dict(k)[label] for k in fams[name]["samples"]}


def test_parser_rejects_what_the_format_forbids():
    """The parser is the oracle: make sure it says no."""
    good = ('# HELP a_total x \\\\ y\\n\n# TYPE a_total counter\n'
            'a_total{l="q\\"\\n\\\\",m=""} 1\na_total 2 1700000000000\n'
            'b NaN\nc{x="1",} +Inf\n')
    fams = parse_exposition(good)
    assert one(fams, "a_total", l='q"\n\\', m="") == 1
    assert fams["a_total"]["help"] == "x \\ y\n"
    for bad in ["a 1",                                   # no final newline
                "a{b=\"1\"}1\n",                         # no space
                "1a 1\n", "a-b 1\n",                     # names
                "a{b=1} 1\n", "a{b=\"1} 1\n",            # unquoted, unterminated
                "a{b=\"\\x\"} 1\n",                      # bad escape
                "a{b=\"1\",b=\"2\"} 1\n",                # label twice
                "a{__b=\"1\"} 1\n",                      # reserved label
                "a 1\na 2\n",                            # duplicate series
                "a 1\nb 1\na{x=\"1\"} 1\n",              # family split
                "a 1\n# TYPE a gauge\n",                 # TYPE after samples
                "# TYPE a gauge\n# TYPE a gauge\na 1\n",  # second TYPE
                "# TYPE a meter\na 1\n",                 # bad type
                "a one\n", "a 1 2 3\n", "a 1 x\n"]:      # values
        with pytest.raises(ExpositionError):
            parse_exposition(bad)


# --- the unit program ------------------------------------------------------

def test_unit_writer_and_server():
    r = subprocess.run(["make", "-C", ROOT, "build/tests/unit/test_metrics"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([UNIT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout, r.stdout


def test_unit_counter_registry():
    """tests/unit/test_counters.c: the registry's order, values, BPF slots."""
    r = subprocess.run(["make", "-C", ROOT, "build/tests/unit/test_counters"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([os.path.join(BUILD, "tests", "unit", "test_counters")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout, r.stdout


# --- a real profd ----------------------------------------------------------

class Profd:
    """profd running in the background; its stderr collected line by line."""

    def __init__(self, argv):
        self.lines = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def stderr(self):
        return "\n".join(self.lines)

    def wait_line(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.search(pattern, line)
                if m:
                    return m
            if self.proc.poll() is not None:
                self.reader.join(2)
                break
            time.sleep(0.05)
        pytest.fail(f"no line matching {pattern!r} in {timeout} s:\n{self.stderr()}")

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        return self.proc.returncode


def get(url, timeout=5, method="GET"):
    """(status, content type, body) of @url; HTTP errors are answers too."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """The chain workload (frame pointers), spinning for a minute."""
    out = tmp_path_factory.mktemp("metrics-workload")
    exe = str(out / "chain")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", exe,
                    os.path.join(ROOT, "tests", "workloads", "chain.c")], check=True)
    work = subprocess.Popen([exe, "60"])
    yield work
    work.kill()
    work.wait()


@pytest.fixture(scope="module")
def served(profd_bin, busy, tmp_path_factory):
    """profd with --http-address 127.0.0.1:0 over the busy workload, ready
    (/healthz 200); stopped with SIGINT at the end of the module."""
    out = tmp_path_factory.mktemp("metrics-out")
    p = Profd([profd_bin, "--output-dir", str(out), "--duration", "90",
               "--profile-interval", "1", "--sampling-frequency", "99",
               "--http-address", "127.0.0.1:0"])
    try:
        m = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:(\d+))$", 10)
        url = m.group(1)
        assert int(m.group(2)) > 0
        deadline = time.monotonic() + 60
        while True:
            status, _, body = get(url + "/healthz")
            if status == 200:
                break
            assert status == 503 and body.endswith("\n") and body.count("\n") == 1, body
            assert p.proc.poll() is None, p.stderr()
            assert time.monotonic() < deadline, f"not healthy in 60 s: {body}"
            time.sleep(0.2)
        p.url, p.out = url, out
        yield p
    finally:
        rc = p.stop()
        assert rc == 0, p.stderr()


def fetch_metrics(url):
    status, ctype, body = get(url + "/metrics")
    assert status == 200, body
    assert ctype == CONTENT_TYPE
    fams = parse_exposition(body)
    check_profd_rules(fams)
    return fams


def test_metrics_parse_and_counters_move(served):
    first = fetch_metrics(served.url)
    time.sleep(2.5)
    second = fetch_metrics(served.url)
    assert set(first) <= set(second), set(first) - set(second)
    for name, f in first.items():
        if f["type"] != "counter":
            continue
        for key, v in f["samples"].items():
            assert key in second[name]["samples"], (name, key)
            assert second[name]["samples"][key] >= v, (name, key, v,
                                                        second[name]["samples"][key])
    for name in ["profd_samples_total", "process_cpu_seconds_total",
                 "profd_intervals_total"]:
        assert one(second, name) > one(first, name), name
    # 99 Hz on every CPU for 2.5 s: the workload alone fills one CPU
    assert one(second, "profd_samples_total") - one(first, "profd_samples_total") >= 150
    assert one(second, "profd_events_total", name="bpf_samples") == \
        one(second, "profd_samples_total")


def test_gauges_are_sane(served):
    fams = fetch_metrics(served.url)
    assert one(fams, "profd_up") == 1
    assert one(fams, "profd_build_info", version=label_values(
        fams, "profd_build_info", "version").pop()) == 1
    assert one(fams, "process_resident_memory_bytes") > 1 << 20
    assert one(fams, "process_virtual_memory_bytes") >= \
        one(fams, "process_resident_memory_bytes")
    assert one(fams, "process_open_fds") > 3
    assert one(fams, "process_open_fds") <= one(fams, "process_max_fds")
    start = one(fams, "process_start_time_seconds")
    assert time.time() - 600 < start <= time.time(), start
    assert one(fams, "profd_processes_tracked") >= 1
    assert one(fams, "profd_unwind_rows") > 0          # DWARF unwinding is on
    assert one(fams, "profd_unwind_tables") >= 1
    assert 1 <= one(fams, "profd_unwind_shards_used") <= 64
    assert one(fams, "profd_unwind_memory_bytes") == \
        one(fams, "profd_unwind_shards_used") * (1 << 20)
    assert one(fams, "profd_unwind_memory_bytes") <= \
        one(fams, "profd_unwind_memory_limit_bytes")
    assert one(fams, "profd_profiling_active") == 1
    assert one(fams, "profd_sampling_frequency_hertz") == 99
    assert one(fams, "profd_export_queue_items") == 0   # no endpoint
    assert one(fams, "profd_lost_total", reason="write_error") == \
        one(fams, "profd_write_errors_total") == 0
    # the BPF ringbufs, once tracer_ringbuf_usage() is there
    if "profd_ringbuf_size_bytes" in fams:
        for key, size in fams["profd_ringbuf_size_bytes"]["samples"].items():
            assert dict(key)["ringbuf"] in ("events", "cupti_events")
            assert size > 0 and int(size) & (int(size) - 1) == 0, (key, size)
            assert 0 <= fams["profd_ringbuf_used_bytes"]["samples"][key] <= size


def test_every_profile_counter_is_a_label(served, pprof):
    """lost.NAME / partial.NAME / stat.NAME of a written profile <->
    profd_lost_total{reason}, profd_partial_total{reason},
    profd_events_total{name}: the same names, both ways."""
    deadline = time.monotonic() + 10
    while not glob.glob(str(served.out / "cpu-*.pb.gz")):
        assert time.monotonic() < deadline, served.stderr()
        time.sleep(0.2)
    path = sorted(glob.glob(str(served.out / "cpu-*.pb.gz")))[0]
    text = comments(pprof, path)
    fams = fetch_metrics(served.url)
    for kind, family, label in [("lost", "profd_lost_total", "reason"),
                                ("partial", "profd_partial_total", "reason"),
                                ("stat", "profd_events_total", "name")]:
        names = set(re.findall(rf"\b{kind}\.([a-z0-9_]+)=\d+", text))
        assert names, f"no {kind}.NAME comments in {path}:\n{text[:2000]}"
        assert names == label_values(fams, family, label), (kind, names ^ label_values(
            fams, family, label))


def test_healthz_and_other_paths(served):
    assert get(served.url + "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")
    status, _, body = get(served.url + "/nope")
    assert status == 404, body
    status, _, body = get(served.url + "/metrics", method="POST")
    assert status == 405, body
    status, _, body = get(served.url + "/metrics", method="HEAD")
    assert status == 200 and body == ""


def test_silent_clients_do_not_block(served):
    port = int(served.url.rsplit(":", 1)[1])
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    silent[-1].sendall(b"GET /metr")            # half a request line, then nothing
    try:
        t0 = time.monotonic()
        fetch_metrics(served.url)
        assert get(served.url + "/healthz")[0] == 200
        assert time.monotonic() - t0 < 2, time.monotonic() - t0
    finally:
        for s in silent:
            s.close()


def test_stalled_header_clients_do_not_block(served):
    """8 clients on 127.0.0.1 (where a local Prometheus scrapes from) send
    half a request header and stall: a scrape still succeeds within 3 s."""
    port = int(served.url.rsplit(":", 1)[1])
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
    try:
        for s in stalled:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.2)
        t0 = time.monotonic()
        while True:
            try:
                fetch_metrics(served.url)
                break
            except (OSError, ConnectionError) as e:      # refused or reset
                assert time.monotonic() - t0 < 3, f"no scrape in 3 s: {e!r}"
                time.sleep(0.1)
        assert time.monotonic() - t0 < 3, time.monotonic() - t0
    finally:
        for s in stalled:
            s.close()


def test_port_taken_fails_fast(profd_bin, tmp_path):
    """A taken port: exit 1 with one error line, before the BPF load."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        t0 = time.monotonic()
        r = subprocess.run([profd_bin, "--output-dir", str(tmp_path), "--duration", "5",
                            "--http-address", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=30)
        elapsed = time.monotonic() - t0
    lines = r.stderr.splitlines()
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"profd: error: --http-address 127.0.0.1:{port}: "), lines
    assert "in use" in lines[0], lines
    assert elapsed < 2, f"{elapsed:.2f} s: the BPF programs were loaded first?"
    assert not glob.glob(str(tmp_path / "*.pb.gz"))


@pytest.mark.parametrize("addr", ["127.0.0.1", "127.0.0.1:99999", "::1:80",
                                  "nosuchhost.invalid:0"])
def test_bad_address_fails_fast(profd_bin, tmp_path, addr):
    t0 = time.monotonic()
    r = subprocess.run([profd_bin, "--output-dir", str(tmp_path), "--duration", "5",
                        "--http-address", addr], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0, r.stderr
    assert "http-address" in r.stderr and addr in r.stderr, r.stderr
    assert "sampling" not in r.stderr, r.stderr
    assert time.monotonic() - t0 < 5
