"""USDT probes as uprobe-multi links (src/tracer/usdt_multi.c), without
BPF: build/tests/unit/test_usdt_multi encodes SDT operands, refuses what
it cannot encode and survives a fuzzed library; and its note reader
agrees, site for site, with binutils' readelf (the oracle) on the
injection library and on real programs with probes: CPython (semaphores,
stack operands), libstdc++ (no semaphores), HotSpot (hundreds of sites,
three providers)."""
import errno
import os
import re
import subprocess

import pytest

from conftest import BUILD, run_unit

UNIT = os.path.join(BUILD, "tests", "unit", "test_usdt_multi")
FILES = [
    (os.path.join(BUILD, "libprofd_inject.so"), "profd"),
    ("/usr/bin/python3.11", "python"),
    ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "libstdcxx"),
    ("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", "hotspot_jni"),
    ("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", "hotspot"),
]


def test_usdt_multi_unit():
    r = run_unit("test_usdt_multi")
    release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    if release >= (6, 6):
        assert "uprobe_multi: yes" in r.stdout, r.stdout


def _readelf_sites(path, provider):
    """(name, file offset, semaphore file offset, args) of each of
    @provider's probes, from readelf's notes, segments and sections."""
    segs = []
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            segs.append((vaddr, off, filesz, "E" in f[6:-1]))
    base = 0
    for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        m = re.search(r"\]\s+\.stapsdt\.base\s+\S+\s+([0-9a-f]+)", line)
        if m:
            base = int(m.group(1), 16)

    def offset(addr, exec_only):
        for vaddr, off, filesz, x in segs:
            if (x or not exec_only) and vaddr <= addr < vaddr + filesz:
                return addr - vaddr + off
        return None

    sites = []
    notes = subprocess.run(["readelf", "-nW", path], capture_output=True, text=True,
                           check=True).stdout
    for block in notes.split("NT_STAPSDT")[1:]:
        prov = re.search(r"Provider: (\S+)", block).group(1)
        if prov != provider:
            continue
        name = re.search(r"Name: (\S+)", block).group(1)
        loc, nbase, sema = (int(x, 16) for x in re.search(
            r"Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)",
            block).groups())
        args = re.search(r"Arguments: ?(.*)", block)
        if base and nbase:
            loc += base - nbase
            sema = sema + base - nbase if sema else 0
        sites.append((name, offset(loc, True), offset(sema, False) if sema else 0,
                      args.group(1).strip() if args else ""))
    return sites


@pytest.mark.parametrize("path,provider", FILES, ids=lambda v: os.path.basename(str(v)))
def test_sites_agree_with_readelf(path, provider):
    if not os.path.exists(path):
        pytest.skip(f"{path} not installed")
    want = _readelf_sites(path, provider)
    assert want, f"readelf finds no {provider} probes in {path}"
    r = subprocess.run([UNIT, "sites", path, provider], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    got, status = [], {}
    for line in r.stdout.splitlines():
        name, off, ref, how, *args = line.split(" ")
        got.append((name, int(off, 16), int(ref, 16), " ".join(args)))
        status[got[-1]] = how
    assert got == want
    # every operand form but the index-register one is encoded
    for site, how in status.items():
        assert how == ("refused" if "," in site[3] else "encoded"), site


def test_a_huge_note_section_is_not_read(tmp_path):
    """A file named like the injection library whose .note.stapsdt is 2 MB
    (a hostile one had 200 MB: profd's RSS went to 270 MiB reading it) is
    refused unread: E2BIG."""
    lib = os.path.join(BUILD, "libprofd_inject.so")
    blob = tmp_path / "notes.bin"
    blob.write_bytes(b"\0" * 2_000_000)
    big = tmp_path / "libprofd_inject.so"
    subprocess.run(["objcopy", "--remove-section", ".note.stapsdt", "--add-section",
                    f".note.stapsdt={blob}", "--set-section-flags",
                    ".note.stapsdt=noload,readonly", lib, str(big)], check=True)
    r = subprocess.run([UNIT, "sites", str(big), "profd"], capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip() == f"error -{errno.E2BIG}", r.stdout + r.stderr
