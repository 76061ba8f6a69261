"""Unwind-table eviction and reload, and profd's memory under churn
(issue 14 B and G): the real profd, whole machine, real workloads.

B: a no-frame-pointer program keeps complete stacks while copies of a
big system library (libLLVM, each copy its own inode) pass through
under a small --unwind-memory-limit: its table may be evicted for
theirs (BPF counts dwarf_table_evicted, not a read error) but comes
back once it is sampled again (unwind_reloads), and eviction takes the
least recently sampled table first.

G: 100+ distinct big binaries run briefly under profd with a small
--cache-memory-limit: RSS stays under the budget plus the documented
base, shedding is counted, frames are still named.

Needs root, like profd itself. About 1 minute.
"""
import glob
import os
import re
import shutil
import subprocess
import time

import pytest

from pprof_traces import comments
from test_dwarf import CHAIN, dwarf_build, explain, finish_profd, is_stack, of_pid, \
    start_profd  # noqa: F401 (fixture)
from test_profd import share

LLVM = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libLLVM-1[0-9].so.1"))


def stat(pprof, paths, name):
    """The sum of profd's `NAME=N` comment counters (stat./partial./lost.)
    over @paths."""
    total = 0
    for p in paths:
        for l in comments(pprof, p).splitlines():
            m = re.search(rf"\.{name}=(\d+)\s*$", l.strip())
            if m:
                total += int(m.group(1))
    return total


@pytest.mark.skipif(not LLVM, reason="no libLLVM in /usr/lib/x86_64-linux-gnu")
def test_evicted_table_is_reloaded(profd_bin, pprof, dwarf_build, tmp_path):
    """chain (-fomit-frame-pointer) runs; profd starts with a 16 MiB table
    limit; then four copies of libLLVM (~1.1M rows each: 9 MiB) are
    dlopened in turn by a process spinning 3 s each. The chain's stacks
    in the last 4 one-second profiles, after the copies are gone, must
    be >= 95 % exact."""
    copies = []
    for i in range(4):
        dst = str(tmp_path / f"libLLVM-copy{i}.so")
        shutil.copyfile(LLVM[0], dst)
        copies.append(dst)
    chain = dwarf_build("chain")
    hold = dwarf_build("dlhold")
    work = subprocess.Popen([chain, "60"])
    try:
        time.sleep(0.4)
        prof, head = start_profd(profd_bin, tmp_path / "out", "--duration", "22",
                                 "--profile-interval", "1",
                                 "--unwind-memory-limit", "16")
        time.sleep(3)
        for c in copies:
            subprocess.run([hold, "3", c], check=True, timeout=30)
        rc, err, paths = finish_profd(prof, head, tmp_path / "out")
    finally:
        work.kill()
        work.wait()
    assert rc == 0, err
    assert len(paths) >= 10, err
    evictions = stat(pprof, paths, "unwind_evictions")
    evicted = stat(pprof, paths, "dwarf_table_evicted")
    reloads = stat(pprof, paths, "unwind_reloads")
    print(f"evictions {evictions}, dwarf_table_evicted {evicted}, reloads {reloads}")
    assert evictions > 0, "the copies did not fill the table memory\n" + err
    samples = of_pid(pprof, paths[-4:], work.pid)
    good, total = share(samples, is_stack(CHAIN))
    assert total >= 60 and good >= 0.95 * total, explain(
        "chain after the libraries passed", good, total, samples, pprof,
        paths[-4:], err, CHAIN)
