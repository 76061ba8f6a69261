"""Start-up checks: each missing requirement is one clear line on stderr and
exit status 1, reproduced for real (uname personality, a mount namespace
without BTF, dropped capabilities, a seccomp filter on bpf())."""
import os
import subprocess

import pytest

from conftest import ROOT, mount_ns_argv


def one_line_error(proc):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith("profd: error: "), lines
    return lines[0]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, **kw)


def test_old_kernel_is_refused(profd_bin, tmp_path):
    # the uname-2.6 personality makes uname(2) report a 2.6 release
    line = one_line_error(run(["setarch", "x86_64", "--uname-2.6", profd_bin,
                               "--duration", "1", "--output-dir", str(tmp_path)]))
    assert "too old" in line and "5.15" in line


def test_old_kernel_check_can_be_skipped(profd_bin, tmp_path):
    proc = run(["setarch", "x86_64", "--uname-2.6", profd_bin, "--duration", "1",
                "--no-kernel-version-check", "--output-dir", str(tmp_path)])
    assert proc.returncode == 0, proc.stderr


def test_missing_btf_is_refused(profd_bin, tmp_path):
    # hide /sys/kernel/btf in a private mount namespace
    script = (f"mount -t tmpfs none /sys/kernel/btf && exec {profd_bin} "
              f"--duration 1 --output-dir {tmp_path}")
    line = one_line_error(run(mount_ns_argv(script)))
    assert "BTF" in line and "CONFIG_DEBUG_INFO_BTF" in line


def test_missing_capabilities_are_refused(profd_bin, tmp_path):
    # root, but without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN
    line = one_line_error(run(["setpriv", "--bounding-set=-bpf,-perfmon,-sys_admin",
                               "--inh-caps=-bpf,-perfmon,-sys_admin",
                               profd_bin, "--duration", "1", "--output-dir", str(tmp_path)]))
    assert "CAP_BPF" in line and "CAP_PERFMON" in line


def test_bpf_syscall_blocked_is_refused(profd_bin, tmp_path):
    tool = tmp_path / "deny_bpf"
    subprocess.run(["gcc", "-O2", "-o", str(tool),
                    os.path.join(ROOT, "tests", "tools", "deny_bpf.c")], check=True)
    line = one_line_error(run([str(tool), profd_bin, "--duration", "1",
                               "--output-dir", str(tmp_path / "out")]))
    assert "bpf() syscall" in line


def test_unwritable_output_dir_is_refused(profd_bin, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    line = one_line_error(run([profd_bin, "--duration", "1",
                               "--output-dir", str(blocker / "sub")]))
    assert "output directory" in line
