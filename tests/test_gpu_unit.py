"""src/gpu/ on synthetic records: build/tests/unit/test_gpu_correlate (no
BPF, no GPU): correlation either way round, graphs, timeouts, the bound,
names, malformed records and a fixed-seed fuzz, PC samples on a real ELF."""
from conftest import run_unit


def test_gpu_correlate_unit():
    run_unit("test_gpu_correlate")
