"""Blocks in known Python chains and measures its own blocked time
(tests/test_offcpu_runtimes.py): prints, per chain, the runtime's own view
at the blocking call (traceback.extract_stack(), this file's frames, leaf
first) and the ns it spent in the blocking calls.

    sleep   a_sleep -> b_sleep -> c_sleep -> time.sleep(0.02)
    queue   consumer -> q_wait -> queue.Queue.get, fed every 15 ms
    socket  sock_reader -> sock_wait -> socket.recv, fed every 10 ms

usage: offcpu.py SECONDS
"""
import queue
import socket
import sys
import threading
import time
import traceback

DUR = float(sys.argv[1])
NS = {"sleep": 0, "queue": 0, "socket": 0}
VIEW = {}


def view(chain):
    if chain not in VIEW:
        VIEW[chain] = [f.name for f in reversed(traceback.extract_stack())
                       if f.filename == __file__][1:]


def timed(chain, fn, *args):
    view(chain)
    t = time.monotonic_ns()
    v = fn(*args)
    NS[chain] += time.monotonic_ns() - t
    return v


def c_sleep():
    timed("sleep", time.sleep, 0.02)


def b_sleep():
    c_sleep()


def a_sleep():
    b_sleep()


q = queue.Queue()
rd, wr = socket.socketpair()


def feeder(period, put):
    end = time.monotonic() + DUR
    while time.monotonic() < end:
        time.sleep(period)
        put()
    time.sleep(0.05)
    put(last=True)


def q_wait():
    return timed("queue", q.get)


def consumer():
    while q_wait():
        pass


def sock_wait():
    return timed("socket", rd.recv, 1)


def sock_reader():
    while sock_wait() == b"x":
        pass


threads = [
    threading.Thread(target=feeder, args=(0.015, lambda last=False: q.put(not last))),
    threading.Thread(target=consumer),
    threading.Thread(target=feeder,
                     args=(0.010, lambda last=False: wr.send(b"." if last else b"x"))),
    threading.Thread(target=sock_reader),
]
for th in threads:
    th.start()
end = time.monotonic() + DUR
while time.monotonic() < end:
    a_sleep()
for th in threads:
    th.join()
for chain, ns in NS.items():
    print(chain, ns, ";".join(VIEW[chain]))
