"""Element-wise arithmetic in pure-Python loops: work numpy does in one vectorised call.

scale_add() computes a * x + y and dot() sums x * y, element by element, indexing
lists in `for i in range(n)` loops: the interpreter runs every multiply and add.
perfsleuth should point at those lines with a numpy hint, and say that the
interpreter itself carries the run (a newer or PGO/LTO CPython helps any such code).

Usage: python3 elementwise.py [ROUNDS]   (default 40, about 2 s)
"""

import sys


def scale_add(a, xs, ys):
    out = [0.0] * len(xs)
    for i in range(len(xs)):
        out[i] = a * xs[i] + ys[i]
    return out


def dot(xs, ys):
    total = 0.0
    for i in range(len(xs)):
        total += xs[i] * ys[i]
    return total


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    n = 200_000
    xs = [float(i % 97) for i in range(n)]
    ys = [float(i % 89) for i in range(n)]
    acc = 0.0
    for _ in range(rounds):
        acc += dot(scale_add(1.5, xs, ys), ys)
    print(f"elementwise: {rounds} rounds, {acc:.1f}")


if __name__ == "__main__":
    main()
