"""--tracers NAME[,NAME...]: which unwinders run (native always; each
language runtime by its registry name, bpf/runtime.h PROFD_RUNTIMES).
The flag and its config-file key: valid lists, unknown and empty names
(one-line usage errors, exit 64), combinations with the older
--no-python-unwinding switch, --print-config round trips; and real runs
over CPython (tests/workloads/python/stacks.py) read back with Google's
pprof: `native` alone, or python switched off either way, leaves no
Python frame; naming python keeps them. Needs root for the real runs,
like profd."""
import os
import re
import subprocess

import pytest
import yaml

from conftest import ROOT, unit_program
from pprof_traces import pprof_traces

PYDIR = os.path.join(ROOT, "tests", "workloads", "python")


def run(profd_bin, *args, timeout=20):
    return subprocess.run([profd_bin, *args], capture_output=True, text=True,
                          timeout=timeout)


def tracer_names(profd_bin):
    """The names --help lists for --tracers ("native,python,...")."""
    out = run(profd_bin, "--help").stdout
    m = re.search(r"--tracers=\S+\s+Which unwinders run, of\s+([a-z0-9_,]+)", out)
    assert m, out
    return m.group(1).split(",")


def printed(profd_bin, *args):
    r = run(profd_bin, *args, "--print-config")
    assert r.returncode == 0, r.stderr
    return yaml.safe_load(r.stdout)["tracers"]


def usage_error(r):
    """The first line of an argp usage error (exit 64, then 'Try ...')."""
    assert r.returncode == 64, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert lines and (len(lines) == 1 or lines[1].startswith("Try ")), lines
    return lines[0]


def test_unit_tracers():
    """tests/unit/test_tracers.c: the names are the runtime registry's, the
    default, lists, errors, the old switch, the file's list replaced."""
    r = subprocess.run([unit_program("test_tracers")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    assert "all passed" in r.stdout


def test_help_lists_native_and_every_runtime(profd_bin):
    names = tracer_names(profd_bin)
    assert names[0] == "native" and "python" in names, names
    assert len(set(names)) == len(names), names


@pytest.mark.parametrize("args,want", [
    ((), ""),                                       # default: all (printed as unset)
    (("--tracers", "native"), ["native"]),
    (("--tracers", "python"), ["native", "python"]),     # native implied
    (("--tracers", "native,python"), ["native", "python"]),
    (("--tracers", "python,native,python"), ["native", "python"]),
    (("--tracers", "native", "--tracers", "python"), ["native", "python"]),
    (("--tracers=native",), ["native"]),
])
def test_valid_lists(profd_bin, args, want):
    assert printed(profd_bin, *args) == want


def test_every_listed_name_is_accepted(profd_bin):
    names = tracer_names(profd_bin)
    assert printed(profd_bin, "--tracers", ",".join(names)) == names


@pytest.mark.parametrize("value,why", [
    ("cobol", "names an unknown tracer 'cobol': known are "),
    ("native,cobol", "names an unknown tracer 'cobol': known are "),
    ("Python", "names an unknown tracer 'Python': known are "),
    ("all", "names an unknown tracer 'all': known are "),
    ("", "must not be empty"),
    ("native,", "takes NAME[,NAME...] of "),
    ("native,,python", "takes NAME[,NAME...] of "),
])
def test_bad_lists_are_usage_errors(profd_bin, value, why):
    r = run(profd_bin, "--tracers", value, "--print-config")
    line = usage_error(r)
    assert line.startswith(f"profd: --tracers {why}"), line
    if "known are" in why or "of " in why:
        assert ",".join(tracer_names(profd_bin)) in line, line


def test_bad_list_stops_a_real_run(profd_bin, tmp_path):
    """Not just --print-config: a run with a bad list never starts."""
    r = run(profd_bin, "--tracers", "rubyy", "--no-gpu", "--duration", "1",
            "--output-dir", str(tmp_path))
    usage_error(r)
    assert not list(tmp_path.glob("cpu-*"))


@pytest.mark.parametrize("text,want", [
    ("tracers: [native]\n", ["native"]),
    ("tracers: [native, python]\n", ["native", "python"]),
    ("tracers:\n  - python\n", ["native", "python"]),
    ("tracers: native, python\n", ["native", "python"]),
    ("tracers: native\n", ["native"]),
    ("tracers: []\n", ""),          # empty: the default (all)
    ("tracers: ~\n", ""),
])
def test_config_file_key(profd_bin, tmp_path, text, want):
    cfg = tmp_path / "t.yaml"
    cfg.write_text("# tracers\n" + text)
    assert printed(profd_bin, "--config", str(cfg)) == want


def test_config_file_errors_and_flag_override(profd_bin, tmp_path):
    cfg = tmp_path / "t.yaml"
    cfg.write_text("duration: 1\ntracers: [native, cobol]\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert r.returncode == 64
    assert r.stderr.strip() == (f"profd: error: {cfg}:2: tracers: names an unknown "
                                "tracer 'cobol': known are " +
                                ",".join(tracer_names(profd_bin)))
    cfg.write_text("tracers: {native: yes}\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert r.returncode == 64 and "tracers: expected a value or a list" in r.stderr
    # a flag replaces the file's list, it does not add to it
    cfg.write_text("tracers: [python]\n")
    assert printed(profd_bin, "--config", str(cfg), "--tracers", "native") == ["native"]
    # and the printed file reads back the same
    r = run(profd_bin, "--tracers", "native", "--print-config")
    cfg.write_text(r.stdout)
    assert printed(profd_bin, "--config", str(cfg)) == ["native"]


def test_old_switch_combines(profd_bin):
    """--no-python-unwinding keeps working next to --tracers: both are
    printed as given (the run walks python only when both allow it)."""
    r = run(profd_bin, "--tracers", "native,python", "--no-python-unwinding",
            "--print-config")
    d = yaml.safe_load(r.stdout)
    assert d["tracers"] == ["native", "python"] and d["no-python-unwinding"] is True


# --- real runs over CPython ---------------------------------------------------

def python_frames(pprof, tmp_path, profd_bin, *args):
    """Run stacks.py for 3 s under `profd exec ARGS`; (total samples,
    samples with a stacks.py frame)."""
    py = "/usr/bin/python3.11"
    if not os.path.exists(py):
        pytest.skip(f"{py} not installed")
    out = tmp_path / "out"
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "--output-dir", str(out),
                        "--sampling-frequency", "99", *args, "--",
                        py, os.path.join(PYDIR, "stacks.py"), str(tmp_path / "tids"), "3"],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    total = with_py = 0
    for p in sorted(out.glob("cpu-*.pb.gz")):
        for s in pprof_traces(pprof, str(p), "-lines"):
            total += s["value"]
            if any(re.search(r" \S*stacks\.py:\d+$", f) for f in s["frames"]):
                with_py += s["value"]
    return total, with_py


@pytest.mark.parametrize("args", [
    ("--tracers", "native"),
    ("--no-python-unwinding",),
    ("--tracers", "native,python", "--no-python-unwinding"),
], ids=["native", "no-python-unwinding", "python-then-switch-off"])
def test_native_only_runs_have_no_python_frames(profd_bin, pprof, tmp_path, args):
    total, with_py = python_frames(pprof, tmp_path, profd_bin, *args)
    assert total >= 100, total
    assert with_py == 0, (with_py, total)


@pytest.mark.parametrize("args", [(), ("--tracers", "python")], ids=["default", "python"])
def test_python_named_keeps_python_frames(profd_bin, pprof, tmp_path, args):
    total, with_py = python_frames(pprof, tmp_path, profd_bin, *args)
    assert total >= 100, total
    assert with_py >= 0.8 * total, (with_py, total)
