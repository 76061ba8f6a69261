"""Metadata on every sample (issue 7): the real profd over real processes,
read back with Google's pprof and, for OTLP, with ../shared/tools/otlp-sink
(the official schemas). Needs root, like profd, and writable cgroup
hierarchies (cgroup2 and the v1 "pids" one), mounted here if this root
has none mounted.

One profd run (module fixture) over three copies of a busy workload:
 - one started inside a fresh cgroup v2 directory named as docker's
   systemd driver names a container: /system.slice/docker-<64 hex>.scope;
 - one inside a fresh v1 "pids" cgroup named as docker's cgroupfs driver
   does: /docker/<64 hex>;
 - one left where it is (not in a container),
with `--label team=infra --label env=prod` and an OTLP endpoint.

Oracles: the ids are made up here; the cgroup paths are the directories
created here; the build ID is what `readelf -n` says of the workload
binary; the executable name is the binary's file name.
"""
import contextlib
import glob
import gzip
import os
import re
import secrets
import subprocess
import time

import pytest

from conftest import ROOT, cgroup_hierarchy
from pprof_traces import pprof_traces
from test_otlp_export import Sink, attrs

EXE_NAME = "labels-chain"   # the workload binary's file name
LABELS = {"team": "infra", "env": "prod"}


class Cgroup:
    """MOUNT/PARENT/LEAF, PARENT made (and later removed) only if missing."""

    def __init__(self, mount, parent, leaf):
        self.parent_dir = os.path.join(mount, parent)
        self.made_parent = not os.path.isdir(self.parent_dir)
        if self.made_parent:
            os.mkdir(self.parent_dir)
        self.dir = os.path.join(self.parent_dir, leaf)
        os.mkdir(self.dir)
        self.path = f"/{parent}/{leaf}"   # as /proc/PID/cgroup shows it

    def start(self, argv):
        """@argv started inside this cgroup: the shell moves itself in, then execs."""
        procs = os.path.join(self.dir, "cgroup.procs")
        return subprocess.Popen(["/bin/sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh",
                                 *argv])

    def remove(self):
        for d in [self.dir] + ([self.parent_dir] if self.made_parent else []):
            for _ in range(50):   # a killed process leaves its cgroup when reaped
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def build_id_of(path):
    """The GNU build ID of @path as readelf prints it."""
    out = subprocess.run(["readelf", "-n", path], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    assert m, out
    return m.group(1)


def kill(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture(scope="module")
def run(profd_bin, pprof, tmp_path_factory):
    """Run profd once over the three workloads; returns what the tests read."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    tmp = tmp_path_factory.mktemp("labels")
    with contextlib.ExitStack() as mounts:
        v2 = mounts.enter_context(cgroup_hierarchy(tmp / "cgroup2", True))
        v1 = mounts.enter_context(cgroup_hierarchy(tmp / "cgroup-pids", False, "pids"))
        return run_in(profd_bin, pprof, tmp, v2, v1)


def run_in(profd_bin, pprof, tmp, v2, v1):
    """run() with cgroup2 mounted at @v2 and the v1 pids hierarchy at @v1."""
    r = subprocess.run([profd_bin, "--help"], capture_output=True, text=True)
    if "--label" not in r.stdout:
        pytest.fail("profd has no --label flag yet")
    exe = str(tmp / EXE_NAME)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", exe,
                    os.path.join(ROOT, "tests", "workloads", "chain.c")], check=True)
    ids = {"v2": secrets.token_hex(32), "v1": secrets.token_hex(32)}
    cgroups, procs = {}, {}
    sink = Sink(str(tmp / "sink.jsonl"))
    try:
        cgroups["v2"] = Cgroup(v2, "system.slice", f"docker-{ids['v2']}.scope")
        cgroups["v1"] = Cgroup(v1, "docker", ids["v1"])
        procs["v2"] = cgroups["v2"].start([exe, "60"])
        procs["v1"] = cgroups["v1"].start([exe, "60"])
        procs["outside"] = subprocess.Popen([exe, "60"])
        time.sleep(0.3)
        out = tmp / "out"
        pids = ",".join(str(p.pid) for p in procs.values())
        label_args = [a for k, v in LABELS.items() for a in ("--label", f"{k}={v}")]
        prof = subprocess.Popen(
            [profd_bin, "--output-dir", str(out), "--duration", "3", "--sampling-frequency",
             "99", "--profile-interval", "1", "--pid", pids, *label_args,
             "--otlp-endpoint", f"http://127.0.0.1:{sink.grpc_port}", "--otlp-protocol",
             "grpc"], stderr=subprocess.PIPE, text=True)
        err = ""
        for line in prof.stderr:
            err += line
            if line.startswith("profd: sampling "):
                break
        cpu = {k: -cpu_seconds(p.pid) for k, p in procs.items()}
        err += prof.communicate(timeout=60)[1]
        for k, p in procs.items():
            cpu[k] += cpu_seconds(p.pid)
        cgroup_text = {k: open(f"/proc/{p.pid}/cgroup").read() for k, p in procs.items()}
    finally:
        kill(procs.values())
        for c in cgroups.values():
            c.remove()
        sink.stop()
    assert prof.returncode == 0, err
    files = sorted(str(f) for f in out.glob("cpu-*.pb.gz"))
    assert files, err
    samples = [s for f in files for s in pprof_traces(pprof, f)]
    by_pid = {str(p.pid): k for k, p in procs.items()}
    return {
        "ids": ids, "cgroups": {k: c.path for k, c in cgroups.items()},
        "pids": {k: p.pid for k, p in procs.items()}, "cgroup_text": cgroup_text,
        "build_id": build_id_of(exe), "samples": samples,
        "of": {k: [s for s in samples if by_pid.get(s["labels"].get("pid")) == k]
               for k in procs},
        "otlp": [r for r in sink.records() if r["signal"] == "profiles"],
        "stderr": err, "cpu": cpu,
    }


def cpu_seconds(pid):
    """CPU time @pid has had so far, in seconds (/proc/PID/schedstat: ns)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def test_each_workload_was_sampled(run):
    """50 samples each (3 s at 99 Hz of three workloads on two CPUs give
    ~200), or half of what the CPU time each had while profd sampled
    gives at 99 Hz where the machine is too busy for that."""
    for k, got in run["of"].items():
        want = min(50, 0.5 * 99 * run["cpu"][k])
        assert sum(s["value"] for s in got) >= want, (k, want, run["cpu"], run["stderr"])
    assert {s["labels"]["pid"] for s in run["samples"]} == \
        {str(p) for p in run["pids"].values()}


@pytest.mark.parametrize("where", ["v2", "v1"])
def test_process_in_a_docker_cgroup_has_its_container_id(run, where):
    """docker-<id>.scope under system.slice (cgroup2) and /docker/<id> (v1 pids)."""
    for s in run["of"][where]:
        assert s["labels"].get("container_id") == run["ids"][where], s["labels"]
        assert s["labels"].get("cgroup") == run["cgroups"][where], s["labels"]


def test_process_outside_has_no_container_id(run):
    paths = {line.split(":", 2)[2] for line in run["cgroup_text"]["outside"].splitlines()}
    for s in run["of"]["outside"]:
        assert "container_id" not in s["labels"], s["labels"]
        assert s["labels"].get("cgroup") in paths, (s["labels"], paths)


def test_executable_and_build_id_on_every_sample(run):
    for s in run["samples"]:
        assert s["labels"].get("executable") == EXE_NAME, s["labels"]
        assert s["labels"].get("build_id") == run["build_id"], s["labels"]


def test_external_labels_on_every_sample(run):
    for s in run["samples"]:
        for k, v in LABELS.items():
            assert s["labels"].get(k) == v, s["labels"]


def otlp_resources(run):
    """(resource attributes, number of samples) of every ResourceProfiles received."""
    out = []
    for r in run["otlp"]:
        for rp in r["request"].get("resourceProfiles", []):
            n = sum(len(p.get("samples", [])) for sp in rp.get("scopeProfiles", [])
                    for p in sp.get("profiles", []))
            out.append((attrs(rp["resource"]["attributes"]), n))
    return out


def test_external_labels_on_every_otlp_resource(run):
    res = otlp_resources(run)
    assert res, run["stderr"]
    for a, _ in res:
        for k, v in LABELS.items():
            assert a.get(k) == v, a


def test_container_id_on_otlp_resources(run):
    pids = {v: k for k, v in run["pids"].items()}
    seen = set()
    for a, n in otlp_resources(run):
        where = pids.get(a.get("process.pid"))
        assert where, a
        seen.add(where)
        if where == "outside":
            assert "container.id" not in a, a
        else:
            assert a.get("container.id") == run["ids"][where], a
    assert seen == set(run["pids"]), seen


def test_names_that_are_not_utf8_are_repaired(profd_bin, pprof, protoc, proto_dir, tmp_path):
    """A program whose file name (and so comm and executable) holds a byte
    that is not UTF-8: protoc, a strict proto3 decoder, reads the profile
    (string_table is `string`), and the byte reads back as U+FFFD."""
    exe = os.path.join(os.fsencode(str(tmp_path)), b"odd\xffname")
    src = os.path.join(ROOT, "tests", "workloads", "burner.c")
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
    out = tmp_path / "out"
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "-o", str(out), "-F", "199", "--",
                        exe, "3000"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    (path,) = glob.glob(str(out / "cpu-*.pb.gz"))
    with gzip.open(path, "rb") as f:
        raw = f.read()
    d = subprocess.run([protoc, "-I", proto_dir, "--decode=perftools.profiles.Profile",
                        "pprof/profile.proto"], input=raw, capture_output=True, timeout=60)
    assert d.returncode == 0, d.stderr.decode(errors="replace")
    mine = [s for s in pprof_traces(pprof, path) if s["labels"].get("executable", "").startswith("odd")]
    assert mine, path
    assert {s["labels"]["executable"] for s in mine} == {"odd\ufffdname"}
