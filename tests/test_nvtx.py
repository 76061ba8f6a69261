"""NVTX ranges and marks as OTLP spans, span events and log records, and
profiles over OTLP: the real profd (`profd exec`, real BPF, USDT probes on
the real injection library) over a real NVTX program (tests/nvtx/apps/
nvtx_app.c, NVTX v3 headers, no CUDA), exporting to the reference receiver
../shared/tools/otlp-sink (Debian's grpcio + the official schemas). The
program's own JSON record of every range (its own clock) is the oracle for
names, parents, threads and times. Needs root, like profd."""
import base64
import collections
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import BUILD
from pprof_traces import pprof_traces
from test_otlp_export import Sink, attrs
import json

APP = os.path.join(BUILD, "tests", "nvtx", "nvtx_app")
LIB = os.path.join(BUILD, "libprofd_inject.so")
MS = 1_000_000

pytestmark = pytest.mark.skipif(not os.path.exists(APP) or not os.path.exists(LIB),
                                reason="NVTX support not built (no CUDA headers)")


@pytest.fixture
def sink(tmp_path):
    s = Sink(str(tmp_path / "sink.jsonl"))
    yield s
    s.stop()


def endpoint(sink, transport):
    port = sink.grpc_port if transport == "grpc" else sink.http_port
    return f"http://127.0.0.1:{port}"


def run_app(profd_bin, tmp_path, sink, transport, mode, *app_args, profd_args=(),
            env=None, timeout=120, wrapper=()):
    """`profd exec` nvtx_app MODE exporting to @sink (started through
    @wrapper, e.g. `env VAR=...`, which execs it in the same process);
    returns (profd result, the app's own records, output dir)."""
    out = tmp_path / "out"
    rec = tmp_path / "app.jsonl"
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(
        [profd_bin, "exec", "--output-dir", str(out), "--sampling-frequency", "99",
         "--otlp-endpoint", endpoint(sink, transport), "--otlp-protocol",
         "grpc" if transport == "grpc" else "http/protobuf", *profd_args, "--",
         *wrapper, APP, mode, "--out", str(rec), *app_args],
        capture_output=True, text=True, timeout=timeout, env=e)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(l) for l in rec.read_text().splitlines() if l.strip()]
    return p, recs, out


def received(sink, signal_name):
    return [r for r in sink.records() if r["signal"] == signal_name]


def spans_of(sink):
    """Every span the sink decoded, with 'resource', 'scope', 'transport'."""
    out = []
    for r in received(sink, "traces"):
        for rs in r["request"].get("resourceSpans", []):
            res = attrs(rs.get("resource", {}).get("attributes"))
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    out.append(dict(s, resource=res, scope=ss.get("scope", {}).get("name", ""),
                                    transport=r["transport"], attrs=attrs(s.get("attributes"))))
    return out


def logs_of(sink):
    out = []
    for r in received(sink, "logs"):
        for rl in r["request"].get("resourceLogs", []):
            res = attrs(rl.get("resource", {}).get("attributes"))
            for sl in rl.get("scopeLogs", []):
                for l in sl.get("logRecords", []):
                    out.append(dict(l, resource=res, scope=sl.get("scope", {}).get("name", ""),
                                    attrs=attrs(l.get("attributes"))))
    return out


def app_pid(spans):
    pids = {s["resource"]["process.pid"] for s in spans}
    assert len(pids) == 1, pids
    return pids.pop()


def by_name(spans):
    out = collections.defaultdict(list)
    for s in spans:
        out[s["name"]].append(s)
    return out


def between(t, lo, hi, tol=MS // 2):
    """@t (profd's time, CLOCK_MONOTONIC made unix time) lies between the
    program's CLOCK_REALTIME readings @lo and @hi, taken around the NVTX
    call (however long it took, or the thread waited for a CPU), give or
    take @tol for the two clocks' offset."""
    return int(lo) - tol <= int(t) <= int(hi) + tol


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_nested_ranges_on_three_threads_are_the_exact_span_tree(profd_bin, tmp_path, sink,
                                                                transport):
    p, recs, _ = run_app(profd_bin, tmp_path, sink, transport, "nested", "--iter", "4")
    ranges = [r for r in recs if r["kind"] == "range"]
    assert len(ranges) == 3 * 4 * 5
    spans = spans_of(sink)
    assert {s["transport"] for s in spans} == {transport}
    assert len(spans) == len(ranges), (len(spans), len(ranges))
    assert all(s["scope"] == "profd.nvtx" for s in spans)
    ids = {s["spanId"]: s for s in spans}
    assert len(ids) == len(spans)
    # the program's ranges, in order per (thread, name), against the spans
    mine = collections.defaultdict(list)
    for r in sorted(ranges, key=lambda r: r["start_ns"]):
        mine[r["name"]].append(r)
    theirs = {n: sorted(v, key=lambda s: int(s["startTimeUnixNano"]))
              for n, v in by_name(spans).items()}
    assert set(mine) == set(theirs)
    for name, rs in mine.items():
        assert len(theirs[name]) == len(rs), name
        for r, s in zip(rs, theirs[name]):
            start, end = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
            # inside the program's own bracket, each end at its own call
            assert r["start_ns"] - MS <= start <= end <= r["end_ns"] + MS, (name, r, s)
            assert between(start, r["start_ns"], r["start_after_ns"]), (name, r, s)
            assert between(end, r["end_before_ns"], r["end_ns"]), (name, r, s)
            assert s["attrs"]["thread.id"] == r["tid"]
            parent = ids.get(s.get("parentSpanId", ""))
            if r["parent"] is None:
                assert "parentSpanId" not in s or not base64.b64decode(s["parentSpanId"]).strip(b"\0")
            else:
                assert parent is not None and parent["name"] == r["parent"], (name, s)
                assert parent["traceId"] == s["traceId"]
                assert int(parent["startTimeUnixNano"]) <= start <= end <= int(parent["endTimeUnixNano"])
    roots = [s for s in spans if s["name"].startswith("step ")]
    assert len({s["traceId"] for s in roots}) == len(roots) == 12
    # every trace is one step tree of 5 spans
    assert collections.Counter(s["traceId"] for s in spans) == {r["traceId"]: 5 for r in roots}
    assert "0 lost" in p.stderr


def test_start_on_one_thread_end_on_another_is_one_span(profd_bin, tmp_path, sink):
    _, recs, _ = run_app(profd_bin, tmp_path, sink, "grpc", "cross", "--iter", "5")
    spans = by_name(spans_of(sink))
    ranges = [r for r in recs if r["kind"] == "range"]
    for r in ranges:
        (s,) = spans[r["name"]]
        assert r["tid"] != r["end_tid"] or r["name"] == "cross outer"
        assert s["attrs"]["thread.id"] == r["tid"]
        assert between(s["startTimeUnixNano"], r["start_ns"], r["start_after_ns"]), (r, s)
        assert between(s["endTimeUnixNano"], r["end_before_ns"], r["end_ns"]), (r, s)
    (inner,) = spans["cross inner"]
    (outer,) = spans["cross outer"]
    assert inner["parentSpanId"] == outer["spanId"] and inner["traceId"] == outer["traceId"]
    assert len({spans[f"cross {i}"][0]["traceId"] for i in range(5)}) == 5


def test_marks_are_span_events_inside_and_logs_outside(profd_bin, tmp_path, sink):
    _, recs, _ = run_app(profd_bin, tmp_path, sink, "http", "marks")
    marks = [r for r in recs if r["kind"] == "mark"]
    (outer,) = by_name(spans_of(sink))["marks outer"]
    events = outer.get("events", [])
    inside = [m for m in marks if m["parent"] == "marks outer"]
    outside = [m for m in marks if m["parent"] is None]
    assert [e["name"] for e in events] == [m["name"] for m in inside] and len(inside) == 3
    for e, m in zip(events, inside):
        assert between(e["timeUnixNano"], m["time_ns"], m["time_after_ns"]), (e, m)
    lg = sorted(logs_of(sink), key=lambda l: int(l["timeUnixNano"]))
    assert [l["body"]["stringValue"] for l in lg] == [m["name"] for m in outside]
    assert len(outside) == 2
    for l, m in zip(lg, outside):
        assert between(l["timeUnixNano"], m["time_ns"], m["time_after_ns"]), (l, m)
        assert l["attrs"]["thread.id"] == m["tid"] and l["severityNumber"] in (9, "SEVERITY_NUMBER_INFO")
        assert not l.get("traceId")


def test_attributes_domains_and_names(profd_bin, tmp_path, sink):
    _, recs, _ = run_app(profd_bin, tmp_path, sink, "grpc", "attrs", "--mid-delay-ms", "0")
    spans = spans_of(sink)
    ranges = [r for r in recs if r["kind"] == "range"]
    names = {(n["what"], n.get("id")): n["name"] for n in recs if n["kind"] == "name"}
    got = by_name(spans)
    assert len(spans) == len(ranges)
    for r in ranges:
        (s,) = got[r["name"]]
        a = s["attrs"]
        assert s["scope"] == (r.get("domain") or "profd.nvtx"), (r, s["scope"])
        if r.get("color"):   # 0: no color given
            assert a["nvtx.color"] == "#%06x" % (r["color"] & 0xffffff)
        if r.get("category"):
            want = names.get(("domain_category" if r.get("domain") else "category", r["category"]),
                             r["category"])
            assert a["nvtx.category"] == want, (r, a)
        if r.get("payload") is not None:
            pv = a["nvtx.payload"]
            if isinstance(pv, str):   # u64 over INT64_MAX: OTLP ints are signed
                assert r["payload"] > 2**63 - 1 and int(pv) == r["payload"], (r, a)
            elif isinstance(pv, float):
                assert pv == pytest.approx(r["payload"]), (r, a)
            else:
                assert pv == r["payload"], (r, a)
    named_thread = names.get(("thread", next((k[1] for k in names if k[0] == "thread"), None)))
    if named_thread:
        assert any(s["attrs"].get("thread.name") == named_thread for s in spans)


def test_budget_drops_whole_traces_only(profd_bin, tmp_path, sink):
    p, recs, out = run_app(profd_bin, tmp_path, sink, "grpc", "budget", "--traces", "3000",
                           profd_args=("--nvtx-max-spans-per-sec", "200"))
    spans = spans_of(sink)
    per_trace = collections.Counter(s["traceId"] for s in spans)
    assert spans and len(per_trace) < 3000
    # every kept trace is whole: its top range and its 3 children
    assert set(per_trace.values()) == {4}, collections.Counter(per_trace.values())
    ids = {s["spanId"]: s for s in spans}
    for s in spans:
        if s["name"] == "budget top":
            assert not s.get("parentSpanId")
        else:
            assert ids[s["parentSpanId"]]["name"] == "budget top"
    dropped = 4 * 3000 - len(spans)
    assert f"nvtx_spans_dropped_budget={dropped}" in p.stderr.replace(" ", " "), p.stderr[-2000:]


def test_program_exiting_with_open_ranges_still_exports_them(profd_bin, tmp_path, sink):
    _, recs, _ = run_app(profd_bin, tmp_path, sink, "http", "exitopen")
    spans = by_name(spans_of(sink))
    for name in ("open push", "open start"):
        (s,) = spans[name]
        assert s["attrs"].get("nvtx.unfinished") is True
        (r,) = [r for r in recs if r.get("name") == name]
        assert r["end_ns"] is None and int(s["endTimeUnixNano"]) >= r["start_ns"]


def test_resource_attributes_match_the_process(profd_bin, tmp_path, sink):
    """The resource is the process's own: its executable, command line and
    OTEL_SERVICE_NAME (set in its environment only, not profd's). The app
    runs for milliseconds: it may be gone before profd reads /proc, so the
    identity the injection library sends first stands in then."""
    env = {k: v for k, v in os.environ.items() if k != "OTEL_SERVICE_NAME"}
    _, recs, out = run_app(profd_bin, tmp_path, sink, "grpc", "nested", "--iter", "1",
                           env=env, wrapper=("/usr/bin/env", "OTEL_SERVICE_NAME=trainer-7"))
    spans = spans_of(sink)
    res = spans[0]["resource"]
    assert all(s["resource"] == res for s in spans)
    assert res["process.pid"] > 0
    assert res["process.executable.path"] == os.path.realpath(APP)
    assert res["process.executable.name"] == "nvtx_app"
    assert res["process.command_line"] == \
        f"{APP} nested --out {tmp_path / 'app.jsonl'} --iter 1"
    assert res["host.name"] == socket.gethostname()
    assert res["service.name"] == "trainer-7"
    assert {r["tid"] for r in recs if r["kind"] == "range"} == \
        {s["attrs"]["thread.id"] for s in spans}


def test_resource_of_a_program_gone_before_profd_read_it(profd_bin, tmp_path, sink):
    """Whole-machine profd, frozen (SIGSTOP) while a short NVTX program
    (NVTX_INJECTION64_PATH set by hand, as a user does without `profd
    exec`) runs and is reaped: its batches wait in the ringbuf and
    /proc/PID is gone when profd reads them. The resource still names the
    program: what it said of itself when its session began."""
    prof = subprocess.Popen(
        [profd_bin, "--output-dir", str(tmp_path / "out"), "--sampling-frequency", "19",
         "--inject-library", LIB,    # probes on before any process maps it
         "--otlp-endpoint", endpoint(sink, "grpc"), "--otlp-protocol", "grpc"],
        stderr=subprocess.PIPE, text=True)
    head = ""
    try:
        for line in prof.stderr:
            head += line
            if "sampling" in line:
                break
        prof.send_signal(signal.SIGSTOP)
        rec = tmp_path / "app.jsonl"
        env = {k: v for k, v in os.environ.items() if k != "OTEL_SERVICE_NAME"}
        env.update(NVTX_INJECTION64_PATH=LIB, OTEL_SERVICE_NAME="gone-svc")
        app = subprocess.Popen([APP, "nested", "--out", str(rec), "--iter", "1"], env=env)
        assert app.wait(timeout=60) == 0
        assert not os.path.exists(f"/proc/{app.pid}/exe")   # reaped: nothing to read
    finally:
        prof.send_signal(signal.SIGCONT)
    time.sleep(2)
    prof.send_signal(signal.SIGINT)
    err = head + prof.communicate(timeout=60)[1]
    assert prof.returncode == 0, err
    spans = spans_of(sink)
    assert spans, err
    res = spans[0]["resource"]
    assert res["process.executable.path"] == os.path.realpath(APP), res
    assert res["process.executable.name"] == "nvtx_app", res
    assert res["process.command_line"] == f"{APP} nested --out {rec} --iter 1", res
    assert res["service.name"] == "gone-svc", res
    assert res["process.pid"] == app.pid, res


def otlp_cpu_samples(sink):
    """{pid: total value} of the OTLP profiles' cpu/nanoseconds samples."""
    out = collections.Counter()
    for r in received(sink, "profiles"):
        req = r["request"]
        st = req["dictionary"]["stringTable"]
        for rp in req.get("resourceProfiles", []):
            pid = attrs(rp["resource"]["attributes"]).get("process.pid")
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    t = prof["sampleType"]
                    if (st[t.get("typeStrindex", 0)], st[t.get("unitStrindex", 0)]) != \
                            ("samples", "count"):
                        continue
                    for smp in prof.get("samples", []):
                        out[pid] += sum(int(v) for v in smp.get("values", []))
    return out


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_cpu_profiles_arrive_as_otlp_profiles(profd_bin, pprof, tmp_path, sink, transport):
    """The same samples in the pprof files (read by Google's pprof) and in
    the OTLP profiles (decoded with the official schema)."""
    out = tmp_path / "out"
    p = subprocess.run(
        [profd_bin, "exec", "--output-dir", str(out), "--sampling-frequency", "99",
         "--profile-interval", "1", "--otlp-endpoint", endpoint(sink, transport),
         "--otlp-protocol", "grpc" if transport == "grpc" else "http/protobuf", "--",
         "/usr/bin/python3", "-c",
         "import time\ne = time.time() + 2.5\nwhile time.time() < e: pass"],
        capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    files = sorted(str(f) for f in out.glob("cpu-*.pb.gz"))
    assert len(files) >= 2
    want = collections.Counter()
    for f in files:
        for s in pprof_traces(pprof, f):
            want[int(s["labels"]["pid"])] += s["value"]
    got = otlp_cpu_samples(sink)
    assert sum(want.values()) >= 100, want
    assert got == want
    assert {r["transport"] for r in sink.records()} == {transport}


def test_sink_killed_mid_run_profd_keeps_sampling(profd_bin, tmp_path, sink):
    out = tmp_path / "out"
    burn = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
    try:
        prof = subprocess.Popen(
            [profd_bin, "--duration", "6", "--profile-interval", "1", "--output-dir", str(out),
             "--otlp-endpoint", endpoint(sink, "grpc"), "--otlp-protocol", "grpc",
             "--pid", str(burn.pid)],
            stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        sink.stop()
        t0 = time.monotonic()
        _, err = prof.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        burn.kill()
        burn.wait()
    assert prof.returncode == 0, err
    assert elapsed < 3.5 + 10, elapsed   # the rest of the run + at most the stop timeout
    files = list(out.glob("cpu-*.pb.gz"))
    assert len(files) >= 6, err
    assert err.count(" lost") >= 6 and "wrote" in err
    assert "otlp_items_dropped=" in err or "dropped" in err.splitlines()[-1], err[-1500:]


def _nvtx_counts(fams):
    """The NVTX accounting of /metrics: spans, events unseen, pops
    unmatched, events lost (ringbuf, queue, library)."""
    from test_metrics import one
    return {
        "spans": one(fams, "profd_events_total", name="nvtx_spans"),
        "unseen": one(fams, "profd_partial_total", reason="nvtx_events_unseen"),
        "unmatched": one(fams, "profd_partial_total", reason="nvtx_pops_unmatched"),
        "lost": sum(one(fams, "profd_lost_total", reason=r) for r in
                    ("nvtx_events_lost", "nvtx_queue_full", "nvtx_library_dropped")),
    }


def _app_before_profd(profd_bin, tmp_path, app_args, done, before_profd=None):
    """Run nvtx_app @app_args on a fresh copy of the library (a copy no
    profd has attached to), call @before_profd(app, copy) if given, start
    system-wide profd, wait for the program to exit, and return
    _nvtx_counts() once @done(counts) holds (or 10 s passed)."""
    import shutil
    from test_metrics import Profd, fetch_metrics
    copy = tmp_path / "lib" / "libprofd_inject.so"
    copy.parent.mkdir()
    shutil.copy(LIB, copy)
    env = dict(os.environ, NVTX_INJECTION64_PATH=str(copy))
    app = subprocess.Popen([APP, *app_args], env=env, stdout=subprocess.PIPE, text=True)
    p = None
    try:
        if before_profd:
            before_profd(app, copy)
        p = Profd([profd_bin, "--output-dir", str(tmp_path / "out"), "--duration", "120",
                   "--http-address", "127.0.0.1:0"])
        url = p.wait_line(r"^profd: serving /metrics on (http://127\.0\.0\.1:\d+)$",
                          10).group(1)
        p.wait_line(r"sampling", 30)
        app.stdout.read()
        assert app.wait(60) == 0
        deadline = time.monotonic() + 10
        while True:
            counts = _nvtx_counts(fetch_metrics(url))
            if done(counts) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        if p:
            p.stop()
    print(counts)
    return counts


def test_events_of_threads_gone_before_profd_are_counted(profd_bin, tmp_path):
    """Four threads make 1,000 push+pop pairs each and exit before
    system-wide profd starts; the main thread makes one more pair once
    profd is there: the threads' events reach profd as
    nvtx_events_unseen (handed over at each thread's exit), the last pair
    is a span."""
    def threads_done(app, copy):
        assert "nvtx_app flood:" in app.stdout.readline()

    c = _app_before_profd(profd_bin, tmp_path,
                          ["flood", "--threads", "4", "--iter", "1000", "--mid-delay-ms", "6000"],
                          lambda c: c["spans"] >= 1, threads_done)
    # the warm-up pair and 4 x 1000 pairs before profd; "flood after" with it
    assert (c["spans"], c["unseen"]) == (1, 2 * (1 + 4 * 1000)), c


@pytest.mark.parametrize("copy_state", ["kept", "deleted"])
def test_events_before_profd_attached_are_counted(profd_bin, tmp_path, copy_state):
    """A program making NVTX ranges (a paced flood, 4 s) starts before
    system-wide profd, on a copy of the library nobody has attached to:
    its first events fire with nobody listening. The library counts them
    and says so with its next batch once profd attached: every push and
    pop of the run is a span's, a pop whose push came before the attach
    (nvtx_pops_unmatched), counted as nvtx_events_unseen or lost,
    none silently missing. "deleted": the copy is removed from its
    directory before profd starts (a new build installed under a running
    job): profd attaches to the file the program maps all the same."""
    pairs = 4000
    want = 2 * pairs

    def delete_copy(app, copy):
        deadline = time.monotonic() + 10
        while str(copy) not in open(f"/proc/{app.pid}/maps").read():
            assert time.monotonic() < deadline, "the program never mapped the library"
            time.sleep(0.02)
        copy.unlink()

    def accounted(c):
        return 2 * c["spans"] + c["unmatched"] + c["unseen"] + c["lost"]

    c = _app_before_profd(profd_bin, tmp_path, ["flood", "--iter", str(pairs), "--rate", "1000"],
                          lambda c: accounted(c) >= want,
                          delete_copy if copy_state == "deleted" else None)
    assert c["unseen"] > 0, "the events before profd attached: none counted"
    assert c["spans"] > 0, "no span after the attach"
    assert accounted(c) == want, c
