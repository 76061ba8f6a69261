"""Fork, asyncio and exec, for tests/test_python.py.

  lifecycle.py fork    parent and forked child both run forked_work()
  lifecycle.py asyncio two tasks in one event loop: coro_outer -> coro_inner
  lifecycle.py exec    /bin/sh execs this interpreter again with 'after_exec'
  lifecycle.py deep    recursion 300 deep: more Python frames than profd keeps
  lifecycle.py forkshort PIDFILE  children that live 30 ms each run
                       short_child(); their pids are appended to PIDFILE
"""
import asyncio
import os
import sys
import time


def spin(n):
    x = 0
    for i in range(n): x = (x * 31 + i) % 1000003  # @spin
    return x


def forked_work():
    while True:
        spin(20000)  # @forked_work


async def coro_inner():
    spin(20000)  # @coro_inner
    await asyncio.sleep(0)


async def coro_outer(name):
    while True:
        await coro_inner()  # @coro_outer


async def amain():
    await asyncio.gather(coro_outer("a"), coro_outer("b"))


def short_child():
    end = time.monotonic() + 0.03
    while time.monotonic() < end:
        spin(200)  # @short_child


def deep(n):
    if n == 0:
        while True:
            spin(20000)  # @deep_hot
    deep(n - 1)  # @deep


def after_exec():
    while True:
        spin(20000)  # @after_exec


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fork":
        pid = os.fork()
        if pid == 0:
            forked_work()
        with open(sys.argv[2], "w") as f:
            f.write(str(pid))
        forked_work()
    elif mode == "asyncio":
        asyncio.run(amain())
    elif mode == "exec":
        os.execv("/bin/sh", ["sh", "-c", 'sleep 0.3; exec "$0" "$1" after_exec',
                             sys.executable, os.path.abspath(__file__)])
    elif mode == "after_exec":
        after_exec()
    elif mode == "forkshort":
        while True:
            pid = os.fork()
            if pid == 0:
                short_child()
                os._exit(0)
            with open(sys.argv[2], "a") as f:
                f.write(f"{pid}\n")
            os.waitpid(pid, 0)
            time.sleep(0.05)
    elif mode == "deep":
        sys.setrecursionlimit(10000)
        deep(300)
