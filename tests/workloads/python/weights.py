"""Functions with known, well separated CPU weights (50/30/15/5 %), for
comparing profd with austin in tests/test_python.py. Runs argv[1] seconds.
"""
import sys
import time


def spin(n):
    x = 0
    for i in range(n): x = (x * 31 + i) % 1000003
    return x


def heavy():
    return spin(50000)


def medium():
    return spin(30000)


def light():
    return spin(15000)


def tiny():
    return spin(5000)


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        heavy()
        medium()
        light()
        tiny()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1e9)
