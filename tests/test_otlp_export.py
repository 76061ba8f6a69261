"""OTLP export (src/export/): traces, logs and profiles over OTLP/gRPC and
OTLP/HTTP protobuf, checked by an independent receiver.

tests/unit/test_otlp_export.c sends known spans (with events, attributes,
parent ids), log records and a small struct profile through the batcher,
the profiles encoder and the exporter, then prints the exporter's counters.
../shared/tools/otlp-sink decodes every request with the upstream OTLP
schemas (Debian's python3-grpcio / python3-protobuf, not profd's code) and
writes it as JSON; the expectations below restate the driver's inputs.
Failure paths use small scripted receivers written here: a dead port, a
receiver killed mid-run, one that never answers, HTTP 503/400/partial
success, gRPC UNAVAILABLE/INVALID_ARGUMENT/RetryInfo.
"""
import base64
import http.server
import json
import os
import select
import socket
import subprocess
import threading
import time
from concurrent import futures

import pytest

from conftest import ROOT, SHARED, unit_program

# PROFD_TEST_OTLP_BIN may name a driver built another way (e.g. with
# -fsanitize=address,undefined).
DRIVER = os.environ.get("PROFD_TEST_OTLP_BIN") or os.path.join(
    ROOT, "build", "tests", "unit", "test_otlp_export")
SINK = os.path.join(SHARED, "tools", "otlp-sink")

# --- the inputs of tests/unit/test_otlp_export.c --------------------------

T0 = 1700000000000000000
TRACE_ID = bytes(range(1, 17))
PERIOD = 10000000
APP = "/usr/bin/app"
APP_BUILD_ID = "4f3c2a1b9d8e7f60a1b2c3d4e5f60718293a4b5c"
KERNEL = "[kernel.kallsyms]"
COMPUTE = "ns::compute(int)"
SPAN_ATTRS = {"thread.id": 1234, "thread.name": "worker", "nvtx.payload": 2.5,
              "nvtx.unfinished": True}


def span_id(n, rnd=0):
    return bytes([0xA0, 0, 0, 0, 0, 0, rnd, n])


def b64(b):
    return base64.b64encode(b).decode()


# --- helpers ---------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def value(v):
    """An AnyValue as MessageToDict renders it, as a Python value."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return v["doubleValue"]
    if "boolValue" in v:
        return v["boolValue"]
    return None


def attrs(kvs):
    return {kv["key"]: value(kv.get("value", {})) for kv in kvs or []}


@pytest.fixture(scope="module")
def driver():
    """build/tests/unit/test_otlp_export, built by make."""
    return unit_program("test_otlp_export", "PROFD_TEST_OTLP_BIN")


class Result:
    def __init__(self, proc, out, err, elapsed):
        self.rc = proc.returncode
        self.pid = proc.pid
        self.out = out
        self.err = err
        self.elapsed = elapsed
        self.stats = None
        self.freed_after = None
        for line in out.splitlines():
            if line.startswith("stats: "):
                self.stats = json.loads(line[len("stats: "):])
            elif line.startswith("freed after "):
                self.freed_after = float(line.split()[2])

    def __repr__(self):
        return f"rc={self.rc} elapsed={self.elapsed:.2f}\n{self.out}\n{self.err}"


def start_driver(args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    e.update(env or {})
    return subprocess.Popen([DRIVER] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e), time.monotonic()


def finish(started, timeout=30):
    proc, t0 = started
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"driver hung for {timeout} s:\n{out}\n{err}")
    return Result(proc, out, err, time.monotonic() - t0)


def run_driver(args, env=None, timeout=30):
    return finish(start_driver(args, env), timeout)


class Sink:
    """../shared/tools/otlp-sink on two free ports, JSON lines in @out."""

    def __init__(self, out):
        if not os.access(SINK, os.X_OK):
            pytest.fail(f"{SINK} is missing: the oracles live in ../shared beside the checkout")
        self.grpc_port, self.http_port, self.out = free_port(), free_port(), out
        open(out, "w").close()
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", SINK, "--grpc-port", str(self.grpc_port),
             "--http-port", str(self.http_port), "--out", out, "--max-seconds", "300"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                if line.startswith("otlp-sink ready"):
                    return
                if not line:
                    break
        self.stop()
        pytest.fail(f"otlp-sink did not start: {self.proc.stderr.read()}")

    def mark(self):
        return os.path.getsize(self.out)

    def records(self, since=0):
        with open(self.out) as f:
            f.seek(since)
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def sink(tmp_path_factory):
    s = Sink(str(tmp_path_factory.mktemp("otlp") / "sink.jsonl"))
    yield s
    s.stop()


def endpoint(sink, protocol):
    port = sink.grpc_port if protocol == "grpc" else sink.http_port
    return f"http://127.0.0.1:{port}"


# --- what the driver sends, checked field by field -------------------------

def check_resource(res, r, service_name):
    a = attrs(res["attributes"])
    exe = os.path.realpath(DRIVER)
    assert a["service.name"] == service_name
    assert a["process.pid"] == r.pid
    assert a["process.executable.name"] == os.path.basename(exe)
    assert a["process.executable.path"] == exe
    assert a["process.command_line"].startswith(DRIVER + " ")
    assert a["host.name"] == socket.gethostname()
    if os.access("/etc/machine-id", os.R_OK):
        assert a["host.id"] == open("/etc/machine-id").read().strip()
    assert a["telemetry.sdk.name"] == "profd"
    assert a["telemetry.sdk.language"] == "c"
    assert a["telemetry.sdk.version"]
    assert a["deployment.environment"] == "test env"   # OTEL_RESOURCE_ATTRIBUTES, decoded
    return a


def check_traces(req, r, service_name):
    rs = req["resourceSpans"]
    assert len(rs) == 2
    check_resource(rs[0]["resource"], r, service_name)
    assert len(rs[0]["scopeSpans"]) == 1
    ss = rs[0]["scopeSpans"][0]
    assert ss["scope"] == {"name": "profd.nvtx"}
    spans = ss["spans"]
    assert [s["name"] for s in spans] == ["train", "epoch 0", "step \ufffd\ufffd"]
    for i, s in enumerate(spans):
        assert s["traceId"] == b64(TRACE_ID)
        assert s["spanId"] == b64(span_id(i + 1))
        assert s["kind"] == "SPAN_KIND_INTERNAL"
    assert "parentSpanId" not in spans[0]           # root: empty
    assert spans[1]["parentSpanId"] == b64(span_id(1))
    assert spans[2]["parentSpanId"] == b64(span_id(2))
    times = [(int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])) for s in spans]
    assert times == [(T0, T0 + 10000), (T0 + 1000, T0 + 9000), (T0 + 2000, T0 + 3000)]
    assert attrs(spans[0]["attributes"]) == SPAN_ATTRS
    assert attrs(spans[1]["attributes"]) == {"thread.id": 1234, "thread.name": "worker"}
    assert "attributes" not in spans[2] and "events" not in spans[0]
    assert len(spans[1]["events"]) == 1
    ev = spans[1]["events"][0]
    assert ev["name"] == "checkpoint"
    assert int(ev["timeUnixNano"]) == T0 + 1500
    assert attrs(ev["attributes"]) == {"nvtx.color": "#ff0000"}

    assert attrs(rs[1]["resource"]["attributes"]) == {"service.name": "synthetic",
                                                       "custom.int": 7}
    ss = rs[1]["scopeSpans"]
    assert len(ss) == 1 and ss[0]["scope"] == {"name": "domainA", "version": "1.2"}
    (s,) = ss[0]["spans"]
    assert s["name"] == "synthetic span" and s["spanId"] == b64(span_id(4))
    assert (int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])) == (T0 + 5000, T0 + 6000)


def check_logs(req, r, service_name):
    rl = req["resourceLogs"]
    assert len(rl) == 2
    check_resource(rl[0]["resource"], r, service_name)
    (sl,) = rl[0]["scopeLogs"]
    assert sl["scope"] == {"name": "profd.nvtx"}
    (l0,) = sl["logRecords"]
    assert l0["body"] == {"stringValue": "hello log"}
    assert l0["severityNumber"] == "SEVERITY_NUMBER_INFO"
    assert l0["severityText"] == "INFO"
    assert int(l0["timeUnixNano"]) == T0 + 2500
    assert int(l0["observedTimeUnixNano"]) == T0 + 2600
    assert l0["traceId"] == b64(TRACE_ID) and l0["spanId"] == b64(span_id(3))
    assert attrs(l0["attributes"]) == {"nvtx.color": "#ff0000"}
    (sl,) = rl[1]["scopeLogs"]
    assert sl["scope"] == {"name": "domainA", "version": "1.2"}
    (l1,) = sl["logRecords"]
    assert l1 == {"timeUnixNano": str(T0 + 7000), "body": {"stringValue": "outside any span"}}


def decode_profiles(req):
    """Every sample as (resource attrs, (type, unit), frames leaf first,
    value, sample attrs), resolved through the dictionary; and the
    dictionary's own checks."""
    d = req["dictionary"]
    st = d["stringTable"]
    assert st[0] == "" and len(set(st)) == len(st)
    for table in ("mappingTable", "locationTable", "functionTable", "stackTable",
                  "attributeTable"):
        assert d[table][0] == {}, f"{table}[0] must be the zero value"
    assert d["linkTable"] == [{"traceId": b64(bytes(16)), "spanId": b64(bytes(8))}]

    def s(msg, field):
        return st[msg.get(field, 0)]

    def attr(i):
        a = d["attributeTable"][i]
        return s(a, "keyStrindex"), value(a["value"]), s(a, "unitStrindex")

    def frame(li):
        loc = d["locationTable"][li]
        m = d["mappingTable"][loc.get("mappingIndex", 0)]
        lines = loc.get("lines", [])
        f = d["functionTable"][lines[0].get("functionIndex", 0)] if lines else None
        return {"function": s(f, "nameStrindex") if f else None,
                "system_name": s(f, "systemNameStrindex") if f else None,
                "file": s(f, "filenameStrindex") if f else None,
                "line": int(lines[0].get("line", 0)) if lines else 0,
                "address": int(loc.get("address", 0)),
                "mapping": s(m, "filenameStrindex"),
                "map_range": (int(m.get("memoryStart", 0)), int(m.get("memoryLimit", 0)),
                              int(m.get("fileOffset", 0))),
                "map_attrs": [attr(i) for i in m.get("attributeIndices", [])]}

    out, ids = [], set()
    for rp in req["resourceProfiles"]:
        ra = attrs(rp["resource"]["attributes"])
        (sp,) = rp["scopeProfiles"]
        assert sp["scope"]["name"] == "profd"
        for prof in sp["profiles"]:
            stype = (s(prof["sampleType"], "typeStrindex"), s(prof["sampleType"], "unitStrindex"))
            assert (s(prof["periodType"], "typeStrindex"),
                    s(prof["periodType"], "unitStrindex")) == ("cpu", "nanoseconds")
            assert int(prof["period"]) == PERIOD
            assert int(prof["timeUnixNano"]) == T0
            assert int(prof["durationNano"]) == 10 * 10**9
            pid = base64.b64decode(prof["profileId"])
            assert len(pid) == 16 and pid != bytes(16) and pid not in ids
            ids.add(pid)
            for smp in prof["samples"]:
                stack = d["stackTable"][smp.get("stackIndex", 0)]
                frames = [frame(i) for i in stack.get("locationIndices", [])]
                sattrs = {}
                for i in smp.get("attributeIndices", []):
                    k, v, u = attr(i)
                    sattrs[k] = (v, u) if u else v
                (val,) = smp["values"]
                out.append((ra, stype, frames, int(val), sattrs))
    return out


def check_profiles(req, r, service_name):
    samples = decode_profiles(req)
    got = [(ra.get("process.pid"), t, tuple(f["function"] or hex(f["address"]) for f in frames),
            v, tuple(sorted(sa.items())))
           for ra, t, frames, v, sa in samples]
    me = (("comm", "app"), ("thread_name", "worker"), ("tid", 1001))
    want = []
    for t, scale in ((("samples", "count"), 1), (("cpu", "nanoseconds"), PERIOD)):
        want += [(r.pid, t, (COMPUTE, "main"), 3 * scale, me),
                 (r.pid, t, ("do_syscall_64", COMPUTE, "main"), 2 * scale, me),
                 (1, t, ("0x403000",), 1 * scale, (("tid", 1),)),
                 (None, t, ("main",), 5 * scale, (("bytes", (4096, "bytes")),))]
    assert sorted(got, key=repr) == sorted(want, key=repr)

    # frames in detail, from the deepest stack
    (deep,) = [f for _, _, f, v, _ in samples if len(f) == 3 and v == 2]
    sysf, comp, main = deep
    assert main == {"function": "main", "system_name": "main", "file": "src/main.c", "line": 42,
                    "address": 0x401000, "mapping": APP,
                    "map_range": (0x400000, 0x500000, 0x1000),
                    "map_attrs": [("process.executable.build_id.gnu", APP_BUILD_ID, "")]}
    assert comp["system_name"] == "_ZN2ns7computeEi" and comp["file"] == "src/compute.cc"
    assert comp["line"] == 7 and comp["address"] == 0x402000
    assert sysf["mapping"] == KERNEL and sysf["map_attrs"] == []
    assert sysf["address"] == 0xFFFFFFFF81001000

    # one ResourceProfiles per process; the pid-less sample under the host
    by_pid = {ra.get("process.pid"): ra for ra, *_ in samples}
    assert set(by_pid) == {r.pid, 1, None}
    (mine,) = [rp["resource"] for rp in req["resourceProfiles"]
               if attrs(rp["resource"]["attributes"]).get("process.pid") == r.pid]
    check_resource(mine, r, service_name)
    host = by_pid[None]
    assert "process.executable.name" not in host
    assert host["host.name"] == socket.gethostname()
    assert host["service.name"] == service_name


ENV = {"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test%20env,service.name=from-attrs",
       "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=secret%20value"}


@pytest.mark.parametrize("protocol,gzip", [("grpc", True), ("grpc", False),
                                           ("http/protobuf", True),
                                           ("http/protobuf", False)])
def test_export(driver, sink, protocol, gzip):
    """Spans, logs and a profile arrive intact, decoded by the upstream schemas."""
    env = dict(ENV)
    # no OTEL_SERVICE_NAME anywhere: service.name of OTEL_RESOURCE_ATTRIBUTES
    service_name = "from-attrs"
    if protocol == "http/protobuf":
        # the process's own OTEL_SERVICE_NAME (read from /proc/PID/environ)
        env["OTEL_SERVICE_NAME"] = service_name = "my-svc"
    mark = sink.mark()
    r = run_driver(([] if gzip else ["--no-gzip"]) + [endpoint(sink, protocol), protocol],
                   env=env)
    assert r.rc == 0, r
    st = r.stats
    assert st["requests_sent"] == [1, 1, 1], r
    assert st["items_sent"] == [4, 2, 4]
    assert st["items_dropped"] == 0 and st["requests_dropped"] == 0 and st["retries"] == 0
    assert st["last_error"] == ""
    recs = sink.records(mark)
    assert sorted(x["signal"] for x in recs) == ["logs", "profiles", "traces"]
    transport = "grpc" if protocol == "grpc" else "http"
    assert all(x["transport"] == transport for x in recs)
    by = {x["signal"]: x for x in recs}
    if transport == "http":
        assert by["profiles"]["path"] == "/v1development/profiles"
        assert by["traces"]["path"] == "/v1/traces" and by["logs"]["path"] == "/v1/logs"
    check_traces(by["traces"]["request"], r, service_name)
    check_logs(by["logs"]["request"], r, service_name)
    check_profiles(by["profiles"]["request"], r, service_name)


def test_grpc_insecure_host_port(driver, sink):
    """HOST:PORT without a scheme is https unless OTEL_EXPORTER_OTLP_INSECURE."""
    mark = sink.mark()
    r = run_driver(["--no-profile", f"127.0.0.1:{sink.grpc_port}", "grpc"],
                   env={"OTEL_EXPORTER_OTLP_INSECURE": "true"})
    assert r.rc == 0 and r.stats["requests_sent"] == [1, 1, 0], r
    assert len(sink.records(mark)) == 2


def test_dead_endpoint(driver):
    """Nothing listening: retried within the budget, then dropped and counted."""
    r = run_driver(["--max-retry-ms", "1500", "--flush-ms", "10000",
                    f"http://127.0.0.1:{free_port()}", "grpc"], timeout=20)
    st = r.stats
    assert r.rc == 0 and r.elapsed < 10, r          # drained: every request given up
    assert st["requests_sent"] == [0, 0, 0]
    assert st["requests_dropped"] == 3 and st["items_dropped"] == 10
    assert st["retries"] >= 1
    assert "connect" in st["last_error"].lower() and "gave up" in st["last_error"], r


def test_sink_killed_mid_run(driver, tmp_path):
    """The receiver dies while batches flow: sent ones stay sent, the rest
    are retried, then dropped or abandoned; nothing hangs or is lost from
    the counters."""
    s = Sink(str(tmp_path / "sink.jsonl"))
    try:
        started = start_driver(["--repeat", "40", "--interval-ms", "100", "--no-profile",
                                "--max-retry-ms", "1500", "--flush-ms", "2000",
                                endpoint(s, "grpc"), "grpc"])
        deadline = time.monotonic() + 10
        while len(s.records()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        got = len(s.records())
        s.stop()
        r = finish(started, timeout=20)
    finally:
        s.stop()
    st = r.stats
    assert got >= 4, r
    assert r.elapsed < 15, r
    assert st["retries"] >= 1, r
    total = 40 * (4 + 2)
    sent = sum(st["items_sent"])
    assert sent >= 8 and st["items_dropped"] + st["items_queued"] > 0, r
    assert sent + st["items_dropped"] + st["items_queued"] == total, r
    assert r.freed_after is not None and r.freed_after - r.stats["seconds"] < 1.0, r


def test_hanging_endpoint_frees_promptly(driver):
    """A receiver that accepts and never answers: flush times out and
    otlp_exporter_free() aborts the transfer in flight at once."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        port = srv.getsockname()[1]
        r = run_driver(["--timeout-ms", "30000", "--max-retry-ms", "60000",
                        "--flush-ms", "500", f"http://127.0.0.1:{port}", "http/protobuf"],
                       timeout=20)
    assert r.rc == 1, r                       # not drained
    assert r.stats["flushed"] is False and r.stats["items_queued"] == 10, r
    assert r.freed_after - r.stats["seconds"] < 0.5, r
    assert r.elapsed < 3, r


def test_attempt_timeout_then_dropped(driver):
    """A receiver that never answers: each attempt ends at the timeout, is
    retried within the budget, then the request is dropped."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        port = srv.getsockname()[1]
        r = run_driver(["--no-profile", "--repeat", "1", "--timeout-ms", "300",
                        "--max-retry-ms", "2500", "--flush-ms", "10000",
                        f"http://127.0.0.1:{port}", "grpc"], timeout=20)
    st = r.stats
    assert r.rc == 0 and st["requests_dropped"] == 2 and st["items_dropped"] == 6, r
    assert st["retries"] >= 1 and "timed out" in st["last_error"].lower(), r
    assert r.elapsed < 8, r


def test_queue_full_drops(driver):
    """A full queue drops at otlp_export(), counted, without blocking."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        port = srv.getsockname()[1]
        r = run_driver(["--queue-bytes", "1000", "--repeat", "5", "--flush-ms", "200",
                        "--timeout-ms", "30000", f"http://127.0.0.1:{port}", "http/protobuf"],
                       timeout=20)
    st = r.stats
    assert st["requests_dropped"] >= 5 and "queue full" in st["last_error"], r
    assert st["items_dropped"] + st["items_queued"] == 5 * 6 + 4, r
    assert r.elapsed < 3, r


@pytest.mark.parametrize("ep", ["ftp://127.0.0.1:4317", "127.0.0.1", "http://:4318",
                                "http://127.0.0.1:99999", "http://127.0.0.1:0",
                                "http://exa mple:80", "http://host:80x", "[::1:4317",
                                "http://user@host:4318", ""])
def test_malformed_endpoint(driver, ep):
    r = run_driver([ep, "grpc"], timeout=10)
    assert r.rc == 2, r
    assert r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "malformed endpoint" in lines[0], r
    assert r.elapsed < 2


def test_selfcheck(driver):
    """Bad and edge inputs (NULLs, bad UTF-8, unknown value types, ids out
    of range, no endpoint) fail cleanly inside the driver."""
    r = run_driver(["--selfcheck"], timeout=20)
    assert r.rc == 0 and "FAIL" not in r.out, r
    assert r.out.count("ok  ") >= 14, r


# --- configuration from the environment ------------------------------------

def print_config(env):
    r = run_driver(["--print-config"], env=env, timeout=10)
    return r.rc, json.loads(r.out)


def test_config_from_env(driver):
    rc, c = print_config({
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/custom/traces",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_HEADERS": " api-key = a%20b%2Cc , x-two=2,,",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
        "OTEL_EXPORTER_OTLP_INSECURE": "TRUE",
        "OTEL_SERVICE_NAME": "svc",
        "OTEL_RESOURCE_ATTRIBUTES": "a=1,snow=%E2%98%83,a=2",
    })
    assert rc == 0, c
    assert c["endpoint"] == "https://collector:4317"
    assert c["traces_endpoint"] == "http://t:4318/custom/traces" and c["logs_endpoint"] == ""
    assert c["protocol"] == "grpc" and c["timeout_ms"] == 2500
    assert c["gzip"] is False and c["insecure"] is True and c["service_name"] == "svc"
    assert c["headers"] == ["api-key: a b,c", "x-two: 2"]
    assert c["resource"] == [["a", "2"], ["snow", "\u2603"]]


def test_config_defaults(driver):
    rc, c = print_config({})
    assert rc == 0
    assert c["protocol"] == "http/protobuf" and c["timeout_ms"] == 10000
    assert c["gzip"] is True and c["insecure"] is False and c["endpoint"] == ""


@pytest.mark.parametrize("var,val,word", [
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "PROTOCOL"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "novalue", "HEADERS"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "k=bad%zz", "HEADERS"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "k=a%0d%0aInjected: 1", "HEADERS"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "-5", "TIMEOUT"),
    ("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli", "COMPRESSION"),
    ("OTEL_RESOURCE_ATTRIBUTES", "a=1,=2", "RESOURCE_ATTRIBUTES"),
])
def test_config_errors(driver, var, val, word):
    rc, c = print_config({var: val})
    assert rc == 2 and word in c["error"] and "\n" not in c["error"], c
    assert c["headers"] == [] and c["resource"] == []   # the bad variable is ignored


# --- scripted receivers: retries, Retry-After, RetryInfo, partial success --

class Scripted:
    """An OTLP/HTTP receiver answering from a script of (status, headers, body)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests.append((self.path, dict(self.headers), len(body),
                                       time.monotonic()))
                status, hdrs, out = outer.script.pop(0) if outer.script else (200, {}, b"")
                self.send_response(status)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def pb_len(field, payload):
    n, out = len(payload), bytearray([field << 3 | 2])
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + payload


def run_scripted(script, extra=()):
    s = Scripted(script)
    try:
        r = run_driver(["--no-profile", "--max-retry-ms", "5000", *extra,
                        f"http://127.0.0.1:{s.port}", "http/protobuf"], env=ENV, timeout=20)
    finally:
        s.close()
    return r, s.requests


def test_http_retry_after(driver):
    """503 with Retry-After: 2 is retried after 2 s (not the 0.5-1.5 s backoff)."""
    r, reqs = run_scripted([(503, {"Retry-After": "2"}, b"")])
    assert r.rc == 0 and r.stats["retries"] == 1, r
    assert r.stats["requests_sent"] == [1, 1, 0] and r.stats["items_dropped"] == 0
    assert [p for p, *_ in reqs] == ["/v1/traces", "/v1/traces", "/v1/logs"]
    assert reqs[1][3] - reqs[0][3] >= 1.9
    h = reqs[0][1]
    assert h["Content-Type"] == "application/x-protobuf" and h["Content-Encoding"] == "gzip"
    assert h["x-api-key"] == "secret value"


def test_http_bad_request_not_retried(driver):
    """400 is final: dropped at once, the google.rpc.Status message kept."""
    status = pb_len(2, b"bad data here")            # google.rpc.Status.message
    r, reqs = run_scripted([(400, {}, status)])
    assert r.rc == 0 and r.stats["retries"] == 0, r
    assert r.stats["requests_dropped"] == 1 and r.stats["items_dropped"] == 4
    assert r.stats["requests_sent"] == [0, 1, 0]
    assert "HTTP 400: bad data here" in r.stats["last_error"], r
    assert len(reqs) == 2


def test_http_partial_success(driver):
    """ExportTracePartialSuccess{rejected_spans: 1}: 3 spans sent, 1 dropped."""
    partial = pb_len(1, b"\x08\x01" + pb_len(2, b"one bad span"))
    r, _ = run_scripted([(200, {}, partial)], extra=["--no-gzip"])
    assert r.rc == 0, r
    assert r.stats["items_sent"] == [3, 2, 0] and r.stats["items_dropped"] == 1, r
    assert "one bad span" in r.stats["last_error"]


def grpc_server(handler):
    import grpc
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(handler)}),
        grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.logs.v1.LogsService",
        {"Export": grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"")})))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def test_grpc_unavailable_retried_with_retry_info(driver):
    """UNAVAILABLE once, with a google.rpc.RetryInfo of 2 s in
    grpc-status-details-bin: retried after that delay, then sent."""
    import grpc
    calls = []
    retry_info = pb_len(1, b"\x08\x02")             # RetryInfo{retry_delay{seconds: 2}}
    details = pb_len(3, pb_len(1, b"type.googleapis.com/google.rpc.RetryInfo")
                     + pb_len(2, retry_info))
    status = b"\x08\x0e" + pb_len(2, b"busy") + details

    def handler(req, ctx):
        calls.append((time.monotonic(), dict(ctx.invocation_metadata())))
        if len(calls) == 1:
            ctx.set_trailing_metadata((("grpc-status-details-bin", status),))
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "busy")
        return b""

    server, port = grpc_server(handler)
    try:
        r = run_driver(["--no-profile", "--max-retry-ms", "5000",
                        f"http://127.0.0.1:{port}", "grpc"], env=ENV, timeout=20)
    finally:
        server.stop(0)
    assert r.rc == 0 and r.stats["retries"] == 1, r
    assert r.stats["requests_sent"] == [1, 1, 0]
    assert len(calls) == 2 and calls[1][0] - calls[0][0] >= 1.9, calls
    md = calls[0][1]
    assert md["x-api-key"] == "secret value"


def test_grpc_invalid_argument_dropped(driver):
    import grpc
    calls = []

    def handler(req, ctx):
        calls.append(len(req))
        ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad span 50%")

    server, port = grpc_server(handler)
    try:
        r = run_driver(["--no-profile", f"http://127.0.0.1:{port}", "grpc"], timeout=20)
    finally:
        server.stop(0)
    assert r.rc == 0 and r.stats["retries"] == 0 and len(calls) == 1, r
    assert r.stats["requests_dropped"] == 1 and r.stats["items_dropped"] == 4
    assert "grpc-status 3: bad span 50%" in r.stats["last_error"], r


def test_batcher_throughput(driver):
    """Batcher + encoder well above the 200,000 spans/s target (half of it
    asserted, for loaded machines); the measured rate is printed."""
    r = run_driver(["--bench", "300000", "--flush-ms", "0", "http://127.0.0.1:1",
                    "http/protobuf"], timeout=30)
    assert r.rc == 0, r
    line = [x for x in r.out.splitlines() if "batcher+encoder" in x][0]
    print(line)
    rate = float(line.split("=")[-1].split()[0])
    assert rate > 100000, line


# --- TLS: HTTP/2 over TLS (ALPN) for gRPC, OTEL_EXPORTER_OTLP_CERTIFICATE ----

@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    """A self-signed certificate for localhost / 127.0.0.1: (cert, key) paths."""
    d = tmp_path_factory.mktemp("tls")
    c, k = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", k, "-out", c, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return c, k


def test_grpc_tls(driver, cert):
    """HOST:PORT without a scheme is gRPC over TLS (h2 by ALPN), verified
    against OTEL_EXPORTER_OTLP_CERTIFICATE; without it the request fails
    verification and is dropped without retries."""
    import grpc
    calls = []

    def handler(req, ctx):
        calls.append(len(req))
        return b""

    c, k = cert
    creds = grpc.ssl_server_credentials([(open(k, "rb").read(), open(c, "rb").read())])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    for svc in ("opentelemetry.proto.collector.trace.v1.TraceService",
                "opentelemetry.proto.collector.logs.v1.LogsService"):
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            svc, {"Export": grpc.unary_unary_rpc_method_handler(handler)}),))
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        ok = run_driver(["--no-profile", f"127.0.0.1:{port}", "grpc"],
                        env={"OTEL_EXPORTER_OTLP_CERTIFICATE": c}, timeout=20)
        bad = run_driver(["--no-profile", f"127.0.0.1:{port}", "grpc"], timeout=20)
    finally:
        server.stop(0)
    assert ok.rc == 0 and ok.stats["requests_sent"] == [1, 1, 0], ok
    assert len(calls) == 2
    assert bad.stats["requests_sent"] == [0, 0, 0] and bad.stats["retries"] == 0, bad
    assert bad.stats["requests_dropped"] == 2
    assert "certificate" in bad.stats["last_error"].lower(), bad


def test_http_tls(driver, cert):
    """https:// for OTLP/HTTP, with the certificate from the environment."""
    import ssl
    s = Scripted([])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*cert)
    s.srv.socket = ctx.wrap_socket(s.srv.socket, server_side=True)
    try:
        r = run_driver(["--no-profile", f"https://localhost:{s.port}", "http/protobuf"],
                       env={"OTEL_EXPORTER_OTLP_CERTIFICATE": cert[0]}, timeout=20)
    finally:
        s.close()
    assert r.rc == 0 and r.stats["requests_sent"] == [1, 1, 0], r
    assert [p for p, *_ in s.requests] == ["/v1/traces", "/v1/logs"]
