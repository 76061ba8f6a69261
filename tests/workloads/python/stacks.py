"""Known Python stacks for tests/test_python.py.

Three threads, each burning CPU under a fixed chain of Python frames:
  chain:   run_chain -> chain_a -> chain_b -> chain_c -> chain_d -> chain_e
  recurse: run_recurse -> recurse x51 (depth 50 .. 0)
  main:    main -> main_work
Every hot loop and every call sits on one line marked `# @NAME`, so the
test reads the expected line numbers from this file. The native thread id
of each role is written as JSON to argv[1] once all threads run; the
script runs until killed (or argv[2] seconds).
"""
import json
import sys
import threading
import time


def burn(n):
    x = 0
    for i in range(n): x = (x * 31 + i) % 1000003  # @burn
    return x


def chain_e():
    x = 0
    for i in range(20000): x = (x * 31 + i) % 1000003  # @chain_e
    return x


def chain_d():
    return chain_e()  # @chain_d


def chain_c():
    return chain_d()  # @chain_c


def chain_b():
    return chain_c()  # @chain_b


def chain_a():
    return chain_b()  # @chain_a


def run_chain(stop):
    while not stop.is_set():
        chain_a()  # @run_chain


def recurse(n):
    if n == 0:
        x = 0
        for i in range(20000): x = (x * 31 + i) % 1000003  # @recurse_hot
        return x
    return recurse(n - 1)  # @recurse


def run_recurse(stop):
    while not stop.is_set():
        recurse(50)  # @run_recurse


def main_work():
    x = 0
    for i in range(20000): x = (x * 31 + i) % 1000003  # @main_work
    return x


def main():
    stop = threading.Event()
    tids = {"main": threading.get_native_id()}
    ready = threading.Barrier(3)

    def start(role, fn):
        def body():
            tids[role] = threading.get_native_id()
            ready.wait()
            fn(stop)
        t = threading.Thread(target=body, name=role, daemon=True)
        t.start()
        return t

    start("chain", run_chain)
    start("recurse", run_recurse)
    ready.wait()
    with open(sys.argv[1] + ".tmp", "w") as f:
        json.dump(tids, f)
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    end = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 1e9)
    while time.monotonic() < end:
        main_work()  # @main
    stop.set()


if __name__ == "__main__":
    main()  # @module
