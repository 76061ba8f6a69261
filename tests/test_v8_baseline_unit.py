"""Baseline (Sparkplug) code's pc -> bytecode offset (issue 19):
build/tests/unit/test_v8_baseline (no process, no BPF): v8_baseline_offset()
on a hand-made bytecode offset table and bytecodes (prefixes, a two-byte
VLQ, a bytecode without code), against V8's BytecodeOffsetIterator worked
out by hand; torn and malformed input answers -EPROTO, never another
offset. tests/test_v8_frames.py checks it against node itself."""
from conftest import run_unit


def test_v8_baseline_unit():
    run_unit("test_v8_baseline", timeout=60)
