"""The process table's lifecycle of exited processes (issue 14 C):
build/tests/unit/test_process_exit (no BPF, real child processes): an
exiting sample read after the exit event keeps the exited entry and its
snapshot, any other sample of that PID is a new process, the listener is
told once after the release time and the entry leaves after the removal
time, a zombie read gets no snapshot."""
from conftest import run_unit


def test_process_exit_unit():
    run_unit("test_process_exit", timeout=60)
