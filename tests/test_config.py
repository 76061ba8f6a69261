"""The config file (--config FILE, YAML) and --print-config: every flag
round-trips through a file, flags override the file, bad keys and values
are one-line errors naming the key. PyYAML (python3-yaml) is the
independent reader of what profd prints."""
import collections
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
    "off-cpu": ("--off-cpu", None, True),
    "off-cpu-threshold": ("--off-cpu-threshold", "0.25", 0.25),
    "off-cpu-min-block": ("--off-cpu-min-block", "250us", "250us"),
    "max-stack-depth": ("--max-stack-depth", "100", 100),
    "probabilistic-interval": ("--probabilistic-interval", "90s", "90s"),
    "probabilistic-threshold": ("--probabilistic-threshold", "25", 25),
    "no-kernel-version-check": ("--no-kernel-version-check", None, True),
    "no-dwarf-unwinding": ("--no-dwarf-unwinding", None, True),
    "no-symbolize-lines": ("--no-symbolize-lines", None, True),
    "no-python-unwinding": ("--no-python-unwinding", None, True),
    "tracers": ("--tracers", "native", ["native"]),
    "stack-copy-bytes": ("--stack-copy-bytes", "4096", 4096),
    "check-unwinder": ("--check-unwinder", None, True),
    "bpf-map-scale-factor": ("--bpf-map-scale-factor", "3", 3),
    "unwind-memory-limit": ("--unwind-memory-limit", "128", 128),
    "symbol-cache-limit": ("--symbol-cache-limit", "64", 64),
    "memory-limit": ("--memory-limit", "256", 256),
    "debuginfod-urls": ("--debuginfod-urls", "http://a:8002 https://b/d",
                        "http://a:8002 https://b/d"),
    "debuginfod-cache": ("--debuginfod-cache", "/tmp/profd dbgd", "/tmp/profd dbgd"),
    "debuginfod-cache-size": ("--debuginfod-cache-size", "100", 100),
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


def test_help_columns(profd_bin):
    """--help as a person reads it: each option's header starts the line
    (`  -x, --name=ARG` or `      --name=ARG`), its text in one column
    beside or under it, every continuation line in that column, and
    nothing wider than 79 characters (glibc's argp misplaced the header or
    the text of options longer than its default column)."""
    env = {k: v for k, v in os.environ.items() if k != "ARGP_HELP_FMT"}
    out = subprocess.run([profd_bin, "--help"], capture_output=True, text=True,
                         env=env).stdout
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"^ +-", l))
    cols, bad = collections.Counter(), []
    for l in lines[start:]:
        if l.strip() and not l.startswith(" "):
            break               # the text after the options
        if not l.strip() or re.match(r"^ \S.*:$", l):
            continue            # blank lines and group titles
        m = re.match(r"^( {2}-\S, | {6})--?\S+( {2,}(\S.*))?$", l)
        if m:
            # a header past the column has its text after it, as GNU tools do
            if m.group(3) and len(l) - len(m.group(2)) < 34:
                cols[len(l) - len(m.group(3))] += 1
            continue
        indent = len(l) - len(l.lstrip(" "))
        cols[indent] += 1
        if indent < 20:
            bad.append(l)
    assert not bad, "lines outside the text column:\n" + "\n".join(bad)
    assert len(cols) == 1, (cols, out)
    assert max(map(len, lines)) <= 79, max(lines, key=len)
    assert not [i for i, l in enumerate(lines) if l and not l.strip()], \
        "lines of spaces alone"


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
    "no-python-unwinding": "[]", "tracers": "cobol", "bpf-map-scale-factor": "9",
    "unwind-memory-limit": "0", "max-processes": "15", "symbol-cache-limit": "0", "memory-limit": "79",
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
    ("samplng-frequency: 9\n", ":1: unknown key 'samplng-frequency'\n"),
    ("sampling_frequency: 9\n",
     ":1: unknown key 'sampling_frequency' (did you mean 'sampling-frequency'?)"),
    ("--memory_limit: 100\n", "unknown key '--memory_limit' (did you mean 'memory-limit'?)"),
    ("no_such_key: 1\n", ":1: unknown key 'no_such_key'\n"),
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
    # a needle ending in "\n" ends the line (no hint after it)
    assert len(lines) == 1 and needle in lines[0] + "\n", lines


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


# Review findings: values are checked where they are parsed, one line each.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_UTF8 = os.fsdecode(b"/tmp/x\xff")     # argv bytes 0xff (surrogateescape)


def usage_error(r):
    """The first line of an argp usage error (exit 64, then 'Try ...')."""
    assert r.returncode == 64, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert lines and (len(lines) == 1 or lines[1].startswith("Try ")), lines
    return lines[0]


def file_error(r, code=64):
    """The one line of a config file error."""
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("flag", ["--output-dir", "--inject-library", "--otlp-endpoint"])
def test_flag_value_not_utf8_is_a_usage_error(profd_bin, flag):
    # not first noticed by --print-config: before it, and naming the option
    r = run(profd_bin, flag, NOT_UTF8, "--print-config")
    assert usage_error(r) == f"profd: {flag} must be valid UTF-8"


def test_config_file_name_not_utf8(profd_bin):
    r = run(profd_bin, "--config", NOT_UTF8, "--print-config")
    assert file_error(r) == "profd: error: --config: the file name must be valid UTF-8"


def test_file_value_not_utf8_names_line_and_key(profd_bin, tmp_path):
    cfg = tmp_path / "latin1.yaml"
    cfg.write_bytes(b"# line 1\nduration: 1\noutput-dir: /tmp/caf\xe9\n")
    assert (file_error(run(profd_bin, "--config", str(cfg), "--print-config")) ==
            f"profd: error: {cfg}:3: output-dir: not valid UTF-8 (byte 0xe9)")
    cfg.write_bytes(b"label:\n  team: infra\n  site: caf\xe9\n")
    assert (file_error(run(profd_bin, "--config", str(cfg), "--print-config")) ==
            f"profd: error: {cfg}:3: label: not valid UTF-8 (byte 0xe9)")


@pytest.mark.parametrize("arg,why", [
    (os.fsdecode(b"site=caf\xe9"), "value of 'site' must be valid UTF-8"),
    (os.fsdecode(b"caf\xe9=x"), "key must be valid UTF-8"),
    ("site=", "value of 'site' must not be empty"),
    ("site=a\nb", "value of 'site' must not contain control characters"),
    ("site=a\tb", "value of 'site' must not contain control characters"),
    ("site=a\x7fb", "value of 'site' must not contain control characters"),
    ("site=a\u0085b", "value of 'site' must not contain control characters"),
    ("a\nb=c", "key must not contain control characters"),
    ("stall_reason=x", "'stall_reason' is one of profd's own labels"),
    ("pid=1", "'pid' is one of profd's own labels"),
    ("1site=x", "key '1site' must start with a letter or '_'"),
    ("host.name=x", "'host.name' is an OTLP resource attribute profd sets"),
    ("service.name=x", "'service.name' is an OTLP resource attribute profd sets"),
])
def test_bad_label_flags(profd_bin, arg, why):
    r = run(profd_bin, "--label", arg, "--print-config")
    assert usage_error(r) == f"profd: --label {why}"


@pytest.mark.parametrize("text,line,why", [
    ('label: {"a=b": c}\n', 1, "key 'a=b' must not contain '='"),
    ('label:\n  site: "a\\0b"\n', 2, "value of 'site' must not contain control characters"),
    ('label:\n  "a\\0b": c\n', 2, "key must not contain control characters"),
    ('label: ["site=a\\0b"]\n', 1, "value of 'site' must not contain control characters"),
    ('label:\n  site: "a\\nb"\n', 2, "value of 'site' must not contain control characters"),
    ('label:\n  site: ""\n', 2, "value of 'site' must not be empty"),
    ("label: [site=]\n", 1, "value of 'site' must not be empty"),
    ("label:\n  stall_reason: x\n", 2, "'stall_reason' is one of profd's own labels"),
    ("label:\n  team: ~\n", 2, "value of 'team' must not be empty"),
    ("label: {team: null}\n", 1, "value of 'team' must not be empty"),
    ("label: {a: 1, a: 2}\n", 1, "'a' given twice"),
    ("label: [a=1, a=2]\n", 1, "'a' given twice"),
])
def test_bad_labels_in_a_file(profd_bin, tmp_path, text, line, why):
    cfg = tmp_path / "labels.yaml"
    cfg.write_text(text)
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert file_error(r) == f"profd: error: {cfg}:{line}: label: {why}"


def test_nul_in_a_file_value(profd_bin, tmp_path):
    cfg = tmp_path / "nul.yaml"
    cfg.write_text('duration: 1\noutput-dir: "/tmp/a\\0b"\n')
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert file_error(r) == (f"profd: error: {cfg}:2: output-dir: must not contain "
                             "a NUL character")


def test_label_given_twice_on_the_command_line(profd_bin, tmp_path):
    r = run(profd_bin, "--label", "a=1", "--label", "a=2", "--print-config")
    assert usage_error(r) == "profd: --label 'a' given twice"
    # flags replace the file's list: the same key is not a repeat
    cfg = tmp_path / "labels.yaml"
    cfg.write_text("label: [a=1, b=2]\n")
    assert print_config(profd_bin, "-c", str(cfg), "--label", "a=3")[1]["label"] == ["a=3"]
    # a quoted "null" is text
    cfg.write_text('label: {team: "null"}\n')
    assert print_config(profd_bin, "-c", str(cfg))[1]["label"] == ["team=null"]


def test_good_labels_still_round_trip(profd_bin, tmp_path):
    _, d = print_config(profd_bin, "--label", "site=Zürich · 東京", "--label", "a.b-c_d=x=y")
    assert d["label"] == ["site=Zürich · 東京", "a.b-c_d=x=y"]


@pytest.mark.parametrize("open_,close,line", [
    ("[", "]", 1),
    ("{a: ", "}", 1),
])
def test_deep_nesting_fails_fast(profd_bin, tmp_path, open_, close, line):
    cfg = tmp_path / "deep.yaml"
    n = 200000 // (len(open_) + len(close)) + 1
    cfg.write_text("pid: " + open_ * n + close * n + "\n")
    assert cfg.stat().st_size > 200000
    r = run(profd_bin, "--config", str(cfg), "--print-config", timeout=5)
    assert file_error(r) == (f"profd: error: {cfg}:{line}: lists and mappings nested "
                             "deeper than 32 levels")


def test_deep_block_nesting_names_the_line(profd_bin, tmp_path):
    cfg = tmp_path / "deep.yaml"
    cfg.write_text("".join(" " * i + "label:\n" for i in range(40)) + " " * 40 + "x\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config", timeout=5)
    assert file_error(r) == (f"profd: error: {cfg}:33: lists and mappings nested "
                             "deeper than 32 levels")
    # 32 levels are fine (and then wrong for other reasons)
    cfg.write_text("".join(" " * i + "label:\n" for i in range(31)) + " " * 31 + "x\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config", timeout=5)
    assert "nested" not in r.stderr and r.returncode == 64


def test_fifo_is_refused_without_blocking(profd_bin, tmp_path):
    fifo = tmp_path / "profd.fifo"
    os.mkfifo(fifo)
    r = run(profd_bin, "--config", str(fifo), "--print-config", timeout=5)
    assert file_error(r, 1) == f"profd: error: {fifo}: not a regular file (a FIFO)"


@pytest.mark.parametrize("path,kind", [("/dev/null", "a character device"),
                                       ("/", "a directory")])
def test_not_regular_files_are_refused(profd_bin, path, kind):
    r = run(profd_bin, "--config", path, "--print-config", timeout=5)
    assert file_error(r, 1) == f"profd: error: {path}: not a regular file ({kind})"


def test_big_file_is_refused(profd_bin, tmp_path):
    cfg = tmp_path / "big.yaml"
    cfg.write_text("#" * (1 << 20) + "\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config", timeout=5)
    assert file_error(r, 1) == f"profd: error: {cfg}: bigger than 1048576 bytes"


@pytest.mark.parametrize("value,why", [
    ("::1:7071", "an IPv6 address needs brackets: [ADDRESS]:PORT"),
    ("[]:7071", "empty IPv6 address in brackets"),
    ("local host:7071", 'bad character in host "local host"'),
])
def test_http_address_checked_by_the_server_parser(profd_bin, tmp_path, value, why):
    r = run(profd_bin, "--http-address", value, "--print-config")
    assert usage_error(r) == f"profd: --http-address {why}, got '{value}'"
    cfg = tmp_path / "http.yaml"
    cfg.write_text(f"duration: 1\nhttp-address: '{value}'\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert file_error(r) == f"profd: error: {cfg}:2: http-address: {why}, got '{value}'"


def test_good_http_addresses(profd_bin):
    for value in ("127.0.0.1:7071", "[::1]:0", ":9400", "localhost:65535"):
        _, d = print_config(profd_bin, "--http-address", value)
        assert d["http-address"] == value


def test_verbose_flags_replace_the_files_count(profd_bin, tmp_path):
    cfg = tmp_path / "v.yaml"
    cfg.write_text("verbose: 2\n")
    assert print_config(profd_bin, "--config", str(cfg))[1]["verbose"] == 2
    assert print_config(profd_bin, "--config", str(cfg), "-v")[1]["verbose"] == 1
    assert print_config(profd_bin, "-v", "--config", str(cfg))[1]["verbose"] == 1
    assert print_config(profd_bin, "--config", str(cfg), "-vvv")[1]["verbose"] == 3
    assert print_config(profd_bin, "-v", "--verbose")[1]["verbose"] == 2


@pytest.mark.parametrize("args", [["--config="], ["--config", ""], ["-c", ""]])
def test_empty_config_name(profd_bin, args):
    r = run(profd_bin, *args, "--print-config")
    assert file_error(r) == "profd: error: --config: empty file name"


def test_debug_pid_not_running_is_a_warning(profd_bin, tmp_path):
    # beyond PID_MAX_LIMIT (4194304): never a process
    r = run(profd_bin, "--debug-pid", "4194305", "--duration", "1", "--no-gpu",
            "--output-dir", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "profd: warning: --debug-pid 4194305: no such process (yet)"
    assert sum("--debug-pid" in l for l in lines) == 1
    # printing the settings starts nothing: no warning
    r = run(profd_bin, "--debug-pid", "4194305", "--print-config")
    assert r.returncode == 0 and r.stderr == ""


def man_text():
    with open(os.path.join(ROOT, "docs", "profd.8")) as f:
        return f.read()


def test_man_page_exit_status_of_an_unreadable_config(profd_bin, tmp_path):
    # what profd does ...
    assert run(profd_bin, "--config", str(tmp_path / "missing.yaml")).returncode == 1
    # ... is what the page says: status 1 names the unreadable config file
    status = man_text().split(".SH EXIT STATUS", 1)[1].split(".SH ", 1)[0]
    one, sixty_four = status.split(".B 64", 1)
    assert "config file that cannot be read" in one.split(".B 1\n", 1)[1]
    assert "cannot be read" not in sixty_four


def test_man_page_matches_help(profd_bin):
    text = man_text()
    assert "/usr/local" not in text         # PREFIX is the installer's choice
    assert "../lib/profd/" in text
    help_ = run(profd_bin, "--help").stdout
    assert "-vv libbpf's debug log" in " ".join(help_.split())
    verbose = text.split("\\-\\-verbose\n", 1)[1].split(".TP", 1)[0]
    assert "libbpf's debug log" in verbose and "verifier" not in verbose


def test_intervals_take_durations(profd_bin):
    _, d = print_config(profd_bin, "--profile-interval", "1m", "--duration", "2h")
    assert d["profile-interval"] == 60 and d["duration"] == 7200
    _, d = print_config(profd_bin, "-i", "45", "-d", "0")
    assert d["profile-interval"] == 45 and d["duration"] == 0
    for args in (["-i", "0s"], ["-i", "2d"], ["-d", "366d"], ["-d", "4294967295"]):
        assert "must be seconds or a duration" in usage_error(run(profd_bin, *args,
                                                                  "--print-config"))


def test_verbose_count_stops_at_3(profd_bin, tmp_path):
    """-vvvv is -vvv, so --print-config's output reads back."""
    text, d = print_config(profd_bin, "-vvvv")
    assert d["verbose"] == 3
    cfg = tmp_path / "v.yaml"
    cfg.write_text(text)
    assert print_config(profd_bin, "--config", str(cfg))[1]["verbose"] == 3


@pytest.mark.parametrize("value", ["ftp://x:1", "http://h:99999", "host", "http://a b:1"])
def test_malformed_otlp_endpoint_is_a_usage_error(profd_bin, tmp_path, value):
    """Checked by the exporter's own parser while the options are read: a
    bad endpoint in the service's file must not pass --print-config and
    then stop every start."""
    r = run(profd_bin, "--otlp-endpoint", value, "--print-config")
    assert usage_error(r).startswith("profd: --otlp-endpoint expected http://"), r.stderr
    cfg = tmp_path / "otlp.yaml"
    cfg.write_text(f"otlp-endpoint: '{value}'\n")
    r = run(profd_bin, "--config", str(cfg), "--print-config")
    assert file_error(r).startswith(f"profd: error: {cfg}:1: otlp-endpoint: expected"), r.stderr
    for good in ("http://collector:4318", "https://[::1]:4317/v1", "collector:4317"):
        assert print_config(profd_bin, "--otlp-endpoint", good)[1]["otlp-endpoint"] == good


def test_unwind_memory_limit_stops_at_what_the_maps_hold(profd_bin):
    """1024 shards of 1 MiB (bpf/unwind_table.h): more would be a promise
    the loader cannot keep."""
    assert print_config(profd_bin, "--unwind-memory-limit", "1024")[1][
        "unwind-memory-limit"] == 1024
    assert "must be 1-1024 MiB" in usage_error(run(profd_bin, "--unwind-memory-limit",
                                                   "1025", "--print-config"))


def test_debuginfod_urls_off_and_bad_values(profd_bin, tmp_path):
    """--debuginfod-urls "" (or off) turns the servers off, also in a file
    (where an empty value keeps the default, $DEBUGINFOD_URLS); words that
    are no http://, https:// or file:// URL and a relative cache are usage
    errors naming the option."""
    _, d = print_config(profd_bin, "--debuginfod-urls", "")
    assert d["debuginfod-urls"] == "off"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("debuginfod-urls: off\n")
    _, d = print_config(profd_bin, "-c", str(cfg))
    assert d["debuginfod-urls"] == "off"
    _, d = print_config(profd_bin)
    assert d["debuginfod-urls"] == "" and d["debuginfod-cache-size"] == 2048
    for args in (["--debuginfod-urls", "ftp://x"], ["--debuginfod-urls", "http://"],
                 ["--debuginfod-cache", "cache"], ["--debuginfod-cache-size", "0"]):
        r = run(profd_bin, *args, "--print-config")
        assert r.returncode == 64 and args[0] in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) <= 2, r.stderr


def test_settings_from_the_environment_are_told(profd_bin):
    """A setting left to its environment variable prints "" (so the file
    does not pin the variable's value) and a comment after the document
    names the variable and the value the run takes; a flag wins and gets no
    comment."""
    env = dict(os.environ, DEBUGINFOD_URLS="http://127.0.0.1:1/",
               OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318")
    r = subprocess.run([profd_bin, "--print-config"], capture_output=True, text=True,
                       timeout=20, env=env)
    assert r.returncode == 0, r.stderr
    printed = yaml.safe_load(r.stdout)
    assert printed["debuginfod-urls"] == "" and printed["otlp-endpoint"] == ""
    notes = [l for l in r.stdout.splitlines() if l.startswith("#")]
    assert '# debuginfod-urls: "" takes $DEBUGINFOD_URLS: http://127.0.0.1:1/' in notes, notes
    assert ('# otlp-endpoint: "" takes $OTEL_EXPORTER_OTLP_ENDPOINT: http://127.0.0.1:4318'
            in notes), notes
    r = subprocess.run([profd_bin, "--print-config", "--debuginfod-urls", "off"],
                       capture_output=True, text=True, timeout=20, env=env)
    assert yaml.safe_load(r.stdout)["debuginfod-urls"] == "off"
    assert "DEBUGINFOD_URLS" not in r.stdout, r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--off-cpu-threshold", "0"], "above 0"),
    (["--off-cpu-threshold", "1e-12"], "above 0"),
    (["--off-cpu-threshold", "1.5"], "at most 1"),
    (["--off-cpu-threshold", "-0.5"], "above 0"),
    (["--off-cpu-min-block", "11s"], "0-10s"),
])
def test_off_cpu_knobs_refused(profd_bin, args, needle):
    """A threshold that would record nothing, or more than every switch, and
    a minimum block past 10 s: a one-line usage error, exit 64."""
    r = run(profd_bin, "--off-cpu", *args, "--print-config")
    assert r.returncode == 64 and needle in r.stderr.splitlines()[0], r.stderr


def test_off_cpu_knobs_without_off_cpu_warn(profd_bin, tmp_path):
    """--off-cpu-threshold without --off-cpu does nothing, and says so."""
    r = run(profd_bin, "--off-cpu-threshold", "0.5", "--duration", "1", "--no-gpu",
            "--output-dir", str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "do nothing without --off-cpu" in r.stderr, r.stderr
    assert not list(tmp_path.glob("offcpu-*")), list(tmp_path.iterdir())


def test_debuginfod_urls_from_the_environment_left_out_are_told(profd_bin, tmp_path):
    """$DEBUGINFOD_URLS words that are no http(s)/file URL are left out,
    named in one warning; the start-up line names only the servers asked
    (none left: no fetcher at all)."""
    for urls, asked in [("ftp://x", None), ("ftp://x http://127.0.0.1:1", "http://127.0.0.1:1")]:
        r = subprocess.run([profd_bin, "--duration", "1", "--no-gpu", "--output-dir",
                            str(tmp_path)], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, DEBUGINFOD_URLS=urls))
        assert r.returncode == 0, r.stderr
        assert "'ftp://x' is not an http://, https:// or file:// URL: left out" in r.stderr
        line = [l for l in r.stderr.splitlines() if "profd: debuginfod:" in l]
        if asked:
            assert line and line[0].split(" from ")[1].startswith(asked + " ("), line
        else:
            assert not line, r.stderr
