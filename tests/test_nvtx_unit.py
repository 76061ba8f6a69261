"""src/nvtx/ on synthetic NVTX batch records: build/tests/unit/test_nvtx
(no BPF, no GPU): the clock, span trees of push/pop and start/end ranges
(an end arriving before its start), marks as span events and logs, the
budget, unmatched pops and ends, process exit and stop, strings in chunks
and their bounds, names and payloads, malformed records, a full queue,
and a fixed-seed fuzz of random records."""
from conftest import run_unit


def test_nvtx_unit():
    run_unit("test_nvtx")
