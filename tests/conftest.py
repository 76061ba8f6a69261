"""Shared pytest fixtures: repository paths and the independent oracles
(Google's pprof built from Debian's source, protoc with ../shared/proto)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))


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
