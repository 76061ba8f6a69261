"""Python -> libc qsort (native) -> Python comparator, for tests/test_python.py.

sort_all() sorts with libc's qsort through ctypes; the comparator is a
Python function that burns CPU, so most samples are in compare() called
back from qsort. Runs until killed.
"""
import ctypes
import ctypes.util
import random
import sys

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    x = 0
    for i in range(200): x = (x * 31 + i) % 1000003  # @compare
    return a[0] - b[0]


callback = CMP(compare)


def sort_all():
    values = list(range(3000))
    random.shuffle(values)
    arr = (ctypes.c_int * len(values))(*values)
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), callback)  # @sort_all
    assert list(arr) == sorted(values)


if __name__ == "__main__":
    while True:
        sort_all()  # @module
