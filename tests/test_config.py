"""The config file (--config FILE, YAML) and --print-config: every flag
round-trips through a file, flags override the file, bad keys and values
are one-line errors naming the key. PyYAML (python3-yaml) is the
independent reader of what profd prints."""
import os
import re
import subprocess

import pytest
import yaml

from pprof_traces import comments

# A non-default value for every option a config file may hold: set by
# flags, printed, read back from the file. test_every_option_is_covered
# fails when a new option is missing here.
NON_DEFAULT = {
    "sampling-frequency": ("--sampling-frequency", "99", 99),
    "duration": ("--duration", "3", 3),
    "profile-interval": ("--profile-interval", "7", 7),
    "output-dir": ("--output-dir", "/tmp/profd config/out", "/tmp/profd config/out"),
    "output-retention": ("--output-retention", "2d,5GiB", "2d,5GiB"),
    "pid": ("--pid", "SELF", ["SELF"]),
    "verbose": ("-v", None, 1),
    "include-idle": ("--include-idle", None, True),
    "max-stack-depth": ("--max-stack-depth", "100", 100),
    "probabilistic-interval": ("--probabilistic-interval", "90s", "90s"),
    "probabilistic-threshold": ("--probabilistic-threshold", "25", 25),
    "no-kernel-version-check": ("--no-kernel-version-check", None, True),
    "no-dwarf-unwinding": ("--no-dwarf-unwinding", None, True),
    "no-python-unwinding": ("--no-python-unwinding", None, True),
    "bpf-map-scale-factor": ("--bpf-map-scale-factor", "3", 3),
    "unwind-memory-limit": ("--unwind-memory-limit", "128", 128),
    "max-processes": ("--max-processes", "1000", 1000),
    "bpf-verifier-log-level": ("--bpf-verifier-log-level", "2", 2),
    "debug-pid": ("--debug-pid", "12,34", [12, 34]),
    "label": ("--label", "team=infra: \"core\"", ["team=infra: \"core\""]),
    "http-address": ("--http-address", "127.0.0.1:7071", "127.0.0.1:7071"),
    "no-gpu": ("--no-gpu", None, True),
    "inject-library": ("--inject-library", "/opt/x/libprofd_inject.so",
                       "/opt/x/libprofd_inject.so"),
    "gpu-correlation-timeout": ("--gpu-correlation-timeout", "45", 45),
    "otlp-endpoint": ("--otlp-endpoint", "http://collector:4318", "http://collector:4318"),
    "otlp-protocol": ("--otlp-protocol", "grpc", "grpc"),
    "otlp-insecure": ("--otlp-insecure", None, True),
    "nvtx-max-spans-per-sec": ("--nvtx-max-spans-per-sec", "500", 500),
}
COMMAND_LINE_ONLY = {"config", "print-config", "help", "usage", "version"}


def run(profd_bin, *args, timeout=20):
    return subprocess.run([profd_bin, *args], capture_output=True, text=True,
                          timeout=timeout)


def print_config(profd_bin, *args):
    r = run(profd_bin, *args, "--print-config")
    assert r.returncode == 0, r.stderr
    return r.stdout, yaml.safe_load(r.stdout)


def help_options(profd_bin):
    out = run(profd_bin, "--help").stdout
    return set(re.findall(r"--([a-z][a-z0-9-]+)", out))


def subst(v, pid):
    if isinstance(v, list):
        return [pid if x == "SELF" else x for x in v]
    return pid if v == "SELF" else v


def all_flags(pid):
    argv = []
    for flag, val, _ in NON_DEFAULT.values():
        argv.append(flag)
        if val is not None:
            argv.append(str(pid) if val == "SELF" else val)
    return argv


def test_every_option_is_covered(profd_bin):
    """Every long option of --help is in the printed config (so it can be in
    a file) or is command-line only; and this test sets every one."""
    opts = help_options(profd_bin)
    _, printed = print_config(profd_bin)
    for o in opts - COMMAND_LINE_ONLY:
        assert o in printed, f"--{o} cannot be put in a config file"
        assert o in NON_DEFAULT, f"--{o} is not round-tripped by this test"
    assert set(printed) == set(NON_DEFAULT)


def test_every_flag_round_trips_through_a_file(profd_bin, tmp_path):
    pid = os.getpid()
    text, printed = print_config(profd_bin, *all_flags(pid))
    for key, (_, _, want) in NON_DEFAULT.items():
        assert printed[key] == subst(want, pid), (key, printed[key])
    cfg = tmp_path / "profd.yaml"
    cfg.write_text(text)
    again, reread = print_config(profd_bin, "--config", str(cfg))
    assert reread == printed
    assert again == text
    # a hand-written file in the other accepted forms reads the same
    cfg.write_text("\n".join([
        "# comments are fine",
        "sampling-frequency: '99'",
        "label:",
        '  team: "infra: \\"core\\""',
        f"pid: {pid}",
        "debug-pid: [12, 34]",
        "include-idle: yes",
        "http-address: ~",
    ]) + "\n")
    _, hand = print_config(profd_bin, "-c", str(cfg))
    assert hand["sampling-frequency"] == 99 and hand["pid"] == [pid]
    assert hand["label"] == ['team=infra: "core"'] and hand["debug-pid"] == [12, 34]
    assert hand["include-idle"] is True and hand["http-address"] == ""


def test_defaults_printed_are_the_defaults(profd_bin):
    _, d = print_config(profd_bin)
    assert d["sampling-frequency"] == 19 and d["profile-interval"] == 10
    assert d["probabilistic-interval"] == "1m" and d["probabilistic-threshold"] == 100
    assert d["bpf-map-scale-factor"] == 0 and d["label"] == [] and d["no-gpu"] is False


def test_flags_override_the_file(profd_bin, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sampling-frequency: 50\nlabel: [a=1, b=2]\nprofile-interval: 5\n"
                   "no-gpu: true\n")
    _, d = print_config(profd_bin, "-F", "77", "--config", str(cfg), "--label", "c=3")
    assert d["sampling-frequency"] == 77          # flag, though before --config
    assert d["label"] == ["c=3"]                  # a flag replaces the file's list
    assert d["profile-interval"] == 5 and d["no-gpu"] is True   # from the file
    _, d = print_config(profd_bin, "--config=" + str(cfg), "--label", "c=3",
                        "--label", "d=4")
    assert d["label"] == ["c=3", "d=4"]


def test_config_drives_a_real_run(profd_bin, pprof, tmp_path):
    out = tmp_path / "out"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"output-dir: {out}\nduration: 2\nsampling-frequency: 47\n"
                   "no-gpu: true\nlabel:\n  site: lab\n")
    r = run(profd_bin, "--config", str(cfg), timeout=60)
    assert r.returncode == 0, r.stderr
    profiles = sorted(out.glob("cpu-*.pb.gz"))
    assert profiles, r.stderr
    assert "sampling_frequency_hz=47" in comments(pprof, str(profiles[0]))


BAD_VALUES = {
    "sampling-frequency": "0", "duration": "-1", "profile-interval": "abc",
    "output-retention": "7 parsecs", "pid": "12x", "verbose": "9",
    "include-idle": "maybe", "max-stack-depth": "513",
    "probabilistic-interval": "0s", "probabilistic-threshold": "101",
    "no-kernel-version-check": "2", "no-dwarf-unwinding": "nope",
    "no-python-unwinding": "[]", "bpf-map-scale-factor": "9",
    "unwind-memory-limit": "0", "max-processes": "15",
    "bpf-verifier-log-level": "3", "debug-pid": "-4", "label": "novalue",
    "http-address": "localhost", "no-gpu": "si", "gpu-correlation-timeout": "0",
    "otlp-protocol": "carrier-pigeon", "otlp-insecure": "perhaps",
    "nvtx-max-spans-per-sec": "-1",
}


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_bad_value_names_the_key(profd_bin, tmp_path, key):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"# line 1\nsampling-frequency: 19\n{key}: '{BAD_VALUES[key]}'\n")
    r = run(profd_bin, "--config", str(cfg), "--duration", "1")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 64, r.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"profd: error: {cfg}:3: {key}: "), lines[0]


def test_string_options_reject_structures(profd_bin, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("output-dir:\n  nested: value\n")
    r = run(profd_bin, "--config", str(cfg))
    assert r.returncode == 64 and "output-dir: expected one value" in r.stderr


@pytest.mark.parametrize("text,needle", [
    ("samplng-frequency: 9\n", ":1: unknown key 'samplng-frequency'"),
    ("config: other.yaml\n", ":1: command-line only key 'config'"),
    ("duration: 1\nduration: 2\n", ":2: duration: given twice"),
    ("sampling-frequency: [1\n", ": YAML syntax error"),
    ("- just\n- a list\n", ":1: expected a mapping"),
    ("duration: 1\n---\nduration: 2\n", "more than one YAML document"),
])
def test_malformed_files_are_one_line_errors(profd_bin, tmp_path, text, needle):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    r = run(profd_bin, "--config", str(cfg))
    assert r.returncode == 64, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines


def test_unreadable_file(profd_bin, tmp_path):
    r = run(profd_bin, "--config", str(tmp_path / "missing.yaml"))
    assert r.returncode == 1
    assert r.stderr.strip() == (f"profd: error: {tmp_path}/missing.yaml: cannot read: "
                                "No such file or directory")
    r = run(profd_bin, "--config", str(tmp_path))
    assert r.returncode == 1 and "not a regular file" in r.stderr


def test_empty_file_is_the_defaults(profd_bin, tmp_path):
    cfg = tmp_path / "empty.yaml"
    cfg.write_text("# nothing set\n")
    assert print_config(profd_bin, "--config", str(cfg)) == print_config(profd_bin)
