"""Shared pytest fixtures: repository paths, the independent oracles
(Google's pprof built from Debian's source, protoc with ../shared/proto),
and mounts that hold wherever the tests run: on a machine, or in a chroot
such as ../shared/tools/fresh-debian's root, whose "/" is no mount point
and which binds /sys without its submounts (no cgroup hierarchies)."""
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))


def wait_file(path, timeout=20):
    """Wait until @path exists (AssertionError after @timeout s)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def start(argv, **kw):
    """A workload in its own session, so that stop() kills all it started."""
    return subprocess.Popen(argv, start_new_session=True, **kw)


def stop(p):
    """Kill @p's whole session (SIGKILL) and reap @p."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def _shared_or_skip(*parts):
    path = os.path.join(SHARED, *parts)
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: the oracles live in ../shared beside the checkout")
    return path


def run_unit(name, timeout=300):
    """Run the C test program build/tests/unit/NAME (from the repository
    root); it passes when it exits 0 and prints no FAIL line."""
    binary = os.path.join(BUILD, "tests", "unit", name)
    assert os.access(binary, os.X_OK), f"build/tests/unit/{name} missing: run make"
    r = subprocess.run([binary], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    return r


def unit_program(name, env=None):
    """The path of build/tests/unit/NAME, made by make first, or the
    binary the environment variable @env names (one built another way,
    e.g. with sanitizers)."""
    if env and os.environ.get(env):
        return os.environ[env]
    r = subprocess.run(["make", "-C", ROOT, f"build/tests/unit/{name}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"make failed:\n{r.stdout}\n{r.stderr}"
    return os.path.join(BUILD, "tests", "unit", name)


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def profd_bin():
    path = os.path.join(BUILD, "profd")
    assert os.access(path, os.X_OK), "build/profd missing: run make"
    return path


@pytest.fixture(scope="session")
def pprof():
    """Path to Google's pprof, built once into build/tools/pprof."""
    dest = os.path.join(BUILD, "tools", "pprof")
    if not os.access(dest, os.X_OK):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        subprocess.run([_shared_or_skip("tools", "pprof-build"), dest], check=True)
    return dest


@pytest.fixture(scope="session")
def proto_dir():
    return _shared_or_skip("proto")


@pytest.fixture(scope="session")
def protoc():
    path = shutil.which("protoc")
    assert path, "protoc missing (protobuf-compiler)"
    return path


@pytest.fixture(scope="session")
def chromium():
    path = shutil.which("chromium")
    assert path, "chromium missing"
    return path


# --- mounts ------------------------------------------------------------------

def _unescape(field):
    """A /proc/self/mountinfo path field with its octal escapes (\\040) undone."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _top_mounts():
    """Mount points this process sees whose parent mount it does not see:
    "/" on a machine; in a chroot whose "/" is no mount point, each mount
    made inside it (fresh-debian's binds of /proc, /sys, ...)."""
    with open("/proc/self/mountinfo") as f:
        rows = [line.split() for line in f]
    ids = {r[0] for r in rows}
    return [_unescape(r[4]) for r in rows if r[1] not in ids or r[1] == r[0]]


def mount_ns_argv(script, *args):
    """argv that runs `sh -c @script @args` (as root) in a new mount
    namespace whose mounts stay there, as a container's do. `unshare -m`
    alone makes "/" private there, which fails where "/" is no mount point
    ("cannot change root filesystem propagation: Invalid argument" in a
    chroot); so @script first makes private, recursively, every mount it
    sees whose parent it does not see: "/" on a machine, each of a
    chroot's own mounts. A chroot's directory itself lies on a mount it
    cannot see: mount under /proc, /sys or a scratch_mount, not there."""
    private = "".join(f"mount --make-rprivate {shlex.quote(m)} && " for m in _top_mounts())
    return ["unshare", "-m", "--propagation", "unchanged", "sh", "-c", private + script,
            *args]


@pytest.fixture
def scratch_mount(tmp_path):
    """A tmpfs at TMP/scratch, unmounted after the test: a mount point of
    its own, which mount_ns_argv() makes private in its namespace even in
    a chroot, so what that namespace mounts under it stays there."""
    d = tmp_path / "scratch"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "profd-scratch", str(d)],
                   check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], capture_output=True)


def cgroup_mount(v2, controller=None):
    """Mount point of cgroup2 (@v2) or of the v1 hierarchy with @controller
    in this root, or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            _, mnt, fstype, opts = line.split()[:4]
            if v2 and fstype == "cgroup2":
                return _unescape(mnt)
            if not v2 and fstype == "cgroup" and controller in opts.split(","):
                return _unescape(mnt)
    return None


@contextlib.contextmanager
def cgroup_hierarchy(where, v2, controller=None):
    """The mount point of cgroup2 (@v2) or of the v1 hierarchy with
    @controller: this root's, else the kernel's hierarchy mounted at the
    new directory @where for the duration (a chroot that binds /sys
    without its submounts, as fresh-debian's root, sees none). Skips the
    test, with mount's reason, where the kernel cannot mount it (no v1
    hierarchy of a controller that cgroup2 holds, e.g.)."""
    mnt = cgroup_mount(v2, controller)
    if mnt:
        yield mnt
        return
    name = "cgroup2" if v2 else f"cgroup v1 {controller}"
    fs = ["-t", "cgroup2"] if v2 else ["-t", "cgroup", "-o", controller]
    os.makedirs(where)
    r = subprocess.run(["mount", *fs, "profd-test", str(where)], capture_output=True,
                       text=True)
    if r.returncode:
        pytest.skip(f"no {name} hierarchy mounted, and mount says: {r.stderr.strip()}")
    try:
        yield str(where)
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


def fdinfo_values(pid, field):
    """The value of @field (e.g. "map_id", "link_type") in each fdinfo of
    process @pid that has it, as strings; empty if it is gone."""
    values = []
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return values
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                m = re.search(rf"^{field}:\s*(\S+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            values.append(m.group(1))
    return values


def map_ids(pid):
    """Ids of the BPF maps process @pid holds (its fds' fdinfo); empty if
    it is gone. Lets a test find its own profd's maps when other profd
    instances run on the machine."""
    return {int(v) for v in fdinfo_values(pid, "map_id")}
