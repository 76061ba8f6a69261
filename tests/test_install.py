"""`make install` and what it installs: the man page (docs/profd.8) documents
every long option of `profd --help` and every PROFD_*/OTEL_* variable the
code reads, and renders without warnings (groff, man); `make install
DESTDIR=... PREFIX=/usr` lays out the files, the installed binary runs and
finds its injection library under PREFIX/lib/profd; an existing config is
kept; `make uninstall` removes what was installed; the example config
parses; the generated systemd unit passes `systemd-analyze verify` (no
systemd as PID 1 needed); and profd records kernel and user symbols of
another user's process when run as an unprivileged user with exactly the
unit's capabilities (root, setpriv)."""
import glob
import gzip
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD, ROOT
from pprof_traces import pprof_traces

MAN = os.path.join(ROOT, "docs", "profd.8")
PROFD = os.path.join(BUILD, "profd")
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "SIGNALS",
            "EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"]


def help_long_options():
    out = subprocess.run([PROFD, "--help"], capture_output=True, text=True,
                         check=True).stdout
    opts = sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]+)", out)))
    assert len(opts) > 20, out
    return opts


def render(width=80):
    """The man page as man(1) shows it, and its warnings."""
    env = dict(os.environ, MANWIDTH=str(width), LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", MAN], capture_output=True, text=True,
                       env=env, timeout=60)
    return r


def test_man_documents_every_long_option():
    src = open(MAN).read()
    text = render(200).stdout
    missing_src = [o for o in help_long_options()
                   if "\\-\\-" + o.replace("-", "\\-") not in src]
    missing_text = [o for o in help_long_options() if "--" + o not in text]
    assert not missing_src, f"options of --help not in docs/profd.8: {missing_src}"
    assert not missing_text, f"options missing from the rendered page: {missing_text}"


def test_man_documents_environment_variables():
    """Every PROFD_* / OTEL_* name in the agent's and the library's code."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "inject", "**", "*.c"), recursive=True):
        names |= set(re.findall(r'"((?:PROFD|OTEL)_[A-Z0-9_]+)"', open(path).read()))
    assert "PROFD_NVTX_FLUSH_MS" in names and "OTEL_EXPORTER_OTLP_ENDPOINT" in names
    text = render(200).stdout
    missing = sorted(n for n in names if n not in text)
    assert not missing, f"environment variables not in docs/profd.8: {missing}"


@pytest.mark.parametrize("width", [60, 80, 200])
def test_man_renders_without_warnings(width):
    r = render(width)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    for s in SECTIONS:
        assert re.search(rf"^{s}$", r.stdout, re.M), f"section {s} missing"
    g = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN],
                       capture_output=True, text=True, timeout=60)
    assert g.returncode == 0 and not g.stderr.strip(), g.stderr


def make_install(destdir, *extra):
    r = subprocess.run(["make", "-C", ROOT, "install", f"DESTDIR={destdir}", "PREFIX=/usr",
                        *extra], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def destdir():
    """One `make install DESTDIR=D PREFIX=/usr` in a directory everyone may
    traverse (the capability test runs the binary as another user)."""
    d = tempfile.mkdtemp(prefix="profd-install-", dir="/tmp")
    os.chmod(d, 0o755)
    make_install(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_install_layout(destdir):
    want = {
        "usr/bin/profd": 0o755,
        "usr/lib/profd/libprofd_inject.so": 0o644,
        "usr/share/man/man8/profd.8.gz": 0o644,
        "usr/lib/systemd/system/profd.service": 0o644,
        "etc/profd/profd.yaml": 0o644,
    }
    for rel, mode in want.items():
        path = os.path.join(destdir, rel)
        assert os.path.isfile(path), rel
        assert os.stat(path).st_mode & 0o7777 == mode, (rel, oct(os.stat(path).st_mode))
    with gzip.open(os.path.join(destdir, "usr/share/man/man8/profd.8.gz"), "rb") as f:
        assert f.read() == open(MAN, "rb").read()
    unit = open(os.path.join(destdir, "usr/lib/systemd/system/profd.service")).read()
    assert not re.search(r"@[A-Z_]+@", unit), "unsubstituted @VAR@ in the unit"
    assert re.search(r"^ExecStart=/usr/bin/profd --config /etc/profd/profd.yaml$", unit, re.M)
    assert open(os.path.join(destdir, "etc/profd/profd.yaml")).read() == \
        open(os.path.join(ROOT, "dist", "profd.yaml")).read()
    # nothing else, and no temporary files left behind
    files = sorted(os.path.relpath(os.path.join(dp, f), destdir)
                   for dp, _, fs in os.walk(destdir) for f in fs)
    assert files == sorted(want), files


def test_installed_binary_runs(destdir):
    r = subprocess.run([os.path.join(destdir, "usr/bin/profd"), "--version"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("profd "), r.stdout + r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="profd needs root")
def test_installed_binary_finds_its_inject_library(destdir, tmp_path):
    """`profd exec` hands its command a private copy of the library it found:
    the one in PREFIX/lib/profd (nothing is next to the installed binary)."""
    lib = os.path.join(destdir, "usr/lib/profd/libprofd_inject.so")
    script = 'echo "CUDA=$CUDA_INJECTION64_PATH"; cmp "$CUDA_INJECTION64_PATH" "$1"'
    r = subprocess.run([os.path.join(destdir, "usr/bin/profd"), "exec", "--output-dir",
                        str(tmp_path / "out"), "--", "sh", "-c", script, "sh", lib],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CUDA=/" in r.stdout and "no CUDA injection library" not in r.stderr, \
        r.stdout + r.stderr


def test_install_keeps_an_existing_config(tmp_path):
    conf = tmp_path / "etc" / "profd" / "profd.yaml"
    conf.parent.mkdir(parents=True)
    conf.write_text("sampling-frequency: 99\n")
    r = make_install(str(tmp_path))
    assert conf.read_text() == "sampling-frequency: 99\n"
    assert "keeping" in r.stdout, r.stdout


def test_uninstall(tmp_path):
    make_install(str(tmp_path))
    r = subprocess.run(["make", "-C", ROOT, "uninstall", f"DESTDIR={tmp_path}", "PREFIX=/usr"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    left = sorted(os.path.relpath(os.path.join(dp, f), tmp_path)
                  for dp, _, fs in os.walk(tmp_path) for f in fs)
    assert left == ["etc/profd/profd.yaml"], left
    assert not os.path.exists(tmp_path / "usr/lib/profd")


def test_example_config_parses():
    """dist/profd.yaml is a config profd accepts, with keys of --help only."""
    path = os.path.join(ROOT, "dist", "profd.yaml")
    keys = re.findall(r"^#?\s*([a-z][a-z0-9-]+):", open(path).read(), re.M)
    assert keys and set(keys) <= set(help_long_options()), keys
    r = subprocess.run([PROFD, "--config", path, "--print-config"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert 'output-retention: "7d,10GiB"' in r.stdout, r.stdout
    assert 'output-dir: "/var/lib/profd"' in r.stdout, r.stdout


def unit_capabilities(destdir):
    unit = open(os.path.join(destdir, "usr/lib/systemd/system/profd.service")).read()
    bound = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
    ambient = re.search(r"^AmbientCapabilities=(.*)$", unit, re.M).group(1).split()
    return bound, ambient


def test_systemd_unit_verifies(destdir):
    """systemd-analyze verify on the installed unit, inside the DESTDIR (so
    ExecStart's /usr/bin/profd and the man page are the installed ones);
    --recursive-errors=no: the DESTDIR has no sysinit.target etc. Warnings
    ("Unknown key", "ignoring") do not change its exit status: none allowed."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze missing (package systemd)"
    env = dict(os.environ, MANPATH=os.path.join(destdir, "usr/share/man"),
               SYSTEMD_LOG_COLOR="0")
    r = subprocess.run([analyze, "verify", f"--root={destdir}", "--recursive-errors=no",
                        "profd.service"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    # verify ignores unknown capability names silently: check them here
    known = set(re.findall(r"#define\s+(CAP_[A-Z_]+)\s+\d+\b",
                           open("/usr/include/linux/capability.h").read()))
    bound, ambient = unit_capabilities(destdir)
    assert set(bound) <= known and set(ambient) <= known, (bound, ambient)
    assert set(ambient) == set(bound)
    assert "CAP_BPF" in bound and "CAP_PERFMON" in bound
    assert not {"CAP_DAC_OVERRIDE", "CAP_SYS_MODULE", "CAP_NET_ADMIN"} & set(bound)


SPIN_C = r"""
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) void profd_caps_spin(void)
{
	for (unsigned long i = 0; i < 20000000UL; i++)
		sink += i;
}
__attribute__((noinline)) void profd_caps_syscalls(void)
{
	for (int i = 0; i < 20000; i++)
		getppid();
}
int main(void)
{
	for (;;) {
		profd_caps_spin();
		profd_caps_syscalls();
	}
}
"""
OTHER_UID = 4242	# the workload's owner
PROFD_UID = 65534	# nobody: profd as the unit's dynamic user would be


@pytest.fixture(scope="module")
def private_workload():
    """A program only its owner can read: in a 0700 directory of uid 4242
    (inside one everyone may traverse), to be run as that uid."""
    top = tempfile.mkdtemp(prefix="profd-caps-", dir="/tmp")
    os.chmod(top, 0o755)
    d = os.path.join(top, "home-alice")
    os.makedirs(d)
    src, exe = os.path.join(d, "spin.c"), os.path.join(d, "caps_spin")
    open(src, "w").write(SPIN_C)
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
    for p in (src, exe):
        os.chown(p, OTHER_UID, OTHER_UID)
    os.chmod(exe, 0o700)
    os.chown(d, OTHER_UID, OTHER_UID)
    os.chmod(d, 0o700)
    yield exe
    shutil.rmtree(top, ignore_errors=True)


def run_with_caps(destdir, exe, caps, outdir):
    # (outdir: under a directory nobody may traverse without capabilities:
    # profd's access(2) check of it ignores them)
    """Run the installed profd as nobody with exactly @caps (names without
    CAP_) for 3 s while @exe runs as OTHER_UID; returns profd's
    CompletedProcess and the workload's pid."""
    os.makedirs(outdir)
    os.chown(outdir, PROFD_UID, PROFD_UID)
    capset = "-all," + ",".join("+" + c.lower() for c in caps)
    work = subprocess.Popen(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}",
                             "--clear-groups", exe])
    try:
        r = subprocess.run(["setpriv", f"--reuid={PROFD_UID}", f"--regid={PROFD_UID}",
                            "--clear-groups", f"--inh-caps={capset}",
                            f"--ambient-caps={capset}", f"--bounding-set={capset}",
                            os.path.join(destdir, "usr/bin/profd"), "-v", "--duration", "3",
                            "--sampling-frequency", "199", "--output-dir", outdir],
                           capture_output=True, text=True, timeout=120)
    finally:
        work.kill()
        work.wait()
    return r, work.pid


def caps_result(pprof, outdir, pid):
    samples = []
    for p in sorted(glob.glob(os.path.join(outdir, "cpu-*.pb.gz"))):
        samples += [s for s in pprof_traces(pprof, p) if s["labels"].get("pid") == str(pid)]
    frames = {f for s in samples for f in s["frames"]}
    return {
        "samples": sum(s["value"] for s in samples),
        "user": "profd_caps_spin" in frames or "profd_caps_syscalls" in frames,
        "kernel": bool(frames & {"entry_SYSCALL_64", "do_syscall_64",
                                 "entry_SYSCALL_64_after_hwframe"}),
        "exe": any(s["labels"].get("executable") == "caps_spin" for s in samples),
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch users")
def test_unit_capabilities_are_enough(destdir, private_workload, pprof):
    """As the unit runs it (unprivileged uid, its ambient capabilities),
    profd names the kernel frames and the user frames of another user's
    private binary, labels its executable, and attaches uprobes (the ld.so
    library-load hook, as the GPU probes); without CAP_SYSLOG and
    CAP_DAC_READ_SEARCH it cannot, which shows the workload tests them."""
    _, ambient = unit_capabilities(destdir)
    caps = [c[len("CAP_"):] for c in ambient]
    out = os.path.dirname(os.path.dirname(private_workload))	# mode 0755
    r, pid = run_with_caps(destdir, private_workload, caps, os.path.join(out, "all"))
    assert r.returncode == 0, r.stderr
    assert "cannot watch" not in r.stderr, r.stderr
    assert "warning: without" not in r.stderr, r.stderr
    got = caps_result(pprof, os.path.join(out, "all"), pid)
    assert got["samples"] >= 50, (got, r.stderr)
    assert got["user"] and got["kernel"] and got["exe"], (got, r.stderr)

    fewer = [c for c in caps if c not in ("SYSLOG", "DAC_READ_SEARCH")]
    r, pid = run_with_caps(destdir, private_workload, fewer, os.path.join(out, "fewer"))
    assert r.returncode == 0, r.stderr
    got = caps_result(pprof, os.path.join(out, "fewer"), pid)
    assert got["samples"] >= 50, (got, r.stderr)
    # one line names what is missing and what it costs
    (warn,) = [l for l in r.stderr.splitlines() if "warning: without" in l]
    assert "cap_syslog (kernel frames stay addresses)" in warn, warn
    assert "cap_dac_read_search (" in warn and "cap_sys_ptrace (" not in warn, warn
    assert not got["user"] and not got["kernel"], (got, r.stderr)
