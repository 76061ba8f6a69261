"""A Python stack exactly DEPTH frames deep at all times (bench/python_bpf_cost.sh).

  python3 deep_stack.py [--depth N] SECONDS

<module> -> main -> rec x (DEPTH - 3) -> hot_leaf: hot_leaf spins in pure
bytecode (no Python calls, only C builtins), so every sample of this
process's main thread sees DEPTH Python frames (default 50). Stops after
SECONDS. Works on CPython 3.9-3.13.
"""
import sys
import time


def hot_leaf(deadline):
    x = 0
    while True:
        for i in range(20000):
            x = (x * 31 + i) % 1000003
        if time.monotonic() >= deadline:
            return x


def rec(n, deadline):
    if n == 0:
        return hot_leaf(deadline)
    return rec(n - 1, deadline) + 1


def main(argv):
    depth = 50
    if len(argv) > 2 and argv[0] == "--depth":
        depth = int(argv[1])
        argv = argv[2:]
    if depth < 4:
        sys.exit("deep_stack.py: --depth must be >= 4")
    seconds = float(argv[0])
    sys.setrecursionlimit(depth + 100)
    # <module>, main, hot_leaf and rec(0) .. rec(depth - 4)
    return rec(depth - 4, time.monotonic() + seconds)


if __name__ == "__main__":
    main(sys.argv[1:])
