"""The object loader (issue 14 A): build/tests/unit/test_object_loader (no
BPF): ordered jobs on their own thread, a bounded queue whose drops are
counted, a bounded wait for the writer and a bounded stop while a job is
stuck, and the process table filling a snapshot's objects and build ID
and calling the listener from that thread, removals after maps reads."""
from conftest import run_unit


def test_object_loader_unit():
    run_unit("test_object_loader", timeout=60)
