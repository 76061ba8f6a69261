"""train.py - the Python half of `make run`'s demo: a pretend training
loop in pure Python, so the first profile shows Python functions (file
and line) merged with the interpreter's native frames.

  main -> train -> train_step -> forward -> matmul      (~60 %)
                              -> load_batch -> tokenize (~25 %)
                              -> backward               (~15 %)

Usage: python3 train.py SECONDS
"""
import sys
import time


def matmul(a, b):
    n = len(a)
    return [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(n)] for i in range(n)]


def forward(weights, batch):
    return matmul(weights, batch)


def tokenize(text):
    return [hash(word) % 1000 for word in text.split()]


def load_batch(step):
    text = " ".join(f"token{(step * 7 + i) % 97}" for i in range(600))
    return tokenize(text)


def backward(weights, out):
    for row, grad in zip(weights, out):
        for j in range(len(row)):
            row[j] -= 1e-9 * grad[j]


def train_step(weights, step):
    tokens = load_batch(step)
    n = len(weights)
    batch = [[tokens[(i * n + j) % len(tokens)] / 1000 for j in range(n)] for i in range(n)]
    out = forward(weights, batch)
    backward(weights, out)


def train(seconds):
    weights = [[(i + j) % 5 / 10 for j in range(24)] for i in range(24)]
    end = time.monotonic() + seconds
    step = 0
    while time.monotonic() < end:
        train_step(weights, step)
        step += 1
    return step


def main():
    train(float(sys.argv[1]) if len(sys.argv) > 1 else 10)


if __name__ == "__main__":
    main()
