"""Where a latency curve's misses begin: the knee estimator that the calibration
(calibrate.py) and the cliff benchmark (bench/cache_cliff.py) share.

Under uniform random access over x entries, an LRU structure of K entries misses
1 - K/x of them once x > K. A latency curve over x is then
    a + sum over the levels of c_level * max(0, 1 - K_level/x),
one term per level that has overflowed (L2, TLB, LLC, ...). The knee of a level
is its K in the best least-squares fit of that sum; the levels below it, already
measured, enter the fit at their own knees, so that their still-rising misses are
not mistaken for the start of this level's (a single term fitted past the TLB's
cliff puts the LLC's knee early). A program whose own work per operation grows
with x (uthash's chains lengthen between two doublings of its buckets: 2.0 to 3.8
entries passed per lookup, 20 to 24.5 ns, well inside the L1d) gives it as `work`,
a term of the fit with a free cost per unit: otherwise that saw is taken for the
misses, and the knee moves with the window fitted (183 to 432 entries for
uthash's L1d, 323 to 337 with the chains' length in the fit)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

GRID = 300
WINDOW = 2.0
REFITS = 3

Points = list[tuple[float, float]]
Work = Mapping[float, float]  # x -> the program's own work per operation there


def knee(points: Points, below: Sequence[float] = (), work: Work | None = None) -> float | None:
    """The capacity where misses begin: `lru_fit` over all the points, then again
    over those within a factor WINDOW of the last estimate, until it settles
    (REFITS at most), so that a further rise far past the knee (the next level)
    does not pull it along. `below`: the knees of the levels under this one;
    `work`: the program's work per operation at each x, if it varies."""
    estimate = lru_fit(points, below, work)
    for _ in range(REFITS):
        if estimate is None:
            return None
        near = [(x, y) for x, y in points if estimate / WINDOW <= x <= estimate * WINDOW]
        refined = lru_fit(near, below, work)
        if refined is None or refined == estimate:
            break
        estimate = refined
    return estimate


def lru_fit(points: Points, below: Sequence[float] = (), work: Work | None = None) -> float | None:
    """The capacity K of the best fit of a + sum c_i * miss(K_i) [+ w * work] + c *
    miss(K), with K_i the knees `below` and c > 0. Real, set-associative structures
    start to miss a little before K; the fit puts K where the curve as a whole says
    the misses begin. None when the curve does not rise."""
    points = sorted(points)
    if len(points) < 4 + bool(work):
        return None
    xs, ys = [x for x, _ in points], [y for _, y in points]
    known = known_columns(xs, below) + ([[work[x] for x in xs]] if work else [])
    rise = 1e-9 * max(abs(y) for y in ys)  # below this, a "rise" is rounding error
    best: tuple[float, float | None] = (math.inf, None)
    for step in range(GRID + 1):
        k = xs[1] * (xs[-2] / xs[1]) ** (step / GRID)
        solved = least_squares([*known, [misses(k, x) for x in xs]], ys)
        if solved is not None and solved[0][-1] > rise:
            best = min(best, (solved[1], k))
    return best[1]


def miss_cost(points: Points, capacity: float) -> float:
    """The c of the least-squares fit a + c * miss(capacity) to the points: what
    a miss of a structure of that capacity costs."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    solved = least_squares([[misses(capacity, x) for x in xs]], ys)
    return solved[0][0] if solved else 0.0


def known_columns(xs: list[float], below: Sequence[float]) -> list[list[float]]:
    """The miss columns of the levels below. A level overflowed over all of xs
    has the column 1 - K/x, and any two such columns are, with the intercept,
    linearly dependent (both are affine in 1/x): the fit would be singular, so
    they enter as one. A level that does not rise over xs does not enter."""
    rising = [k for k in below if k < xs[-1]]
    partial = [k for k in rising if k > xs[0]]
    if len(partial) < len(rising):
        partial.append(min(rising))
    return [[misses(k, x) for x in xs] for k in partial]


def misses(capacity: float, x: float) -> float:
    """The share of uniform random accesses over x entries that miss in an LRU
    structure of `capacity` entries."""
    return max(0.0, 1 - capacity / x)


def least_squares(columns: list[list[float]], ys: list[float]) -> tuple[list[float], float] | None:
    """(c, residual) of the least-squares fit y = a + sum c_j * column_j, or None when
    the columns are not independent. Normal equations, solved by elimination: a
    handful of columns, so no linear-algebra library is worth its import."""
    rows = [[1.0, *values] for values in zip(*columns, strict=True)]
    size = len(rows[0])
    matrix = [[sum(r[i] * r[j] for r in rows) for j in range(size)] for i in range(size)]
    rhs = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(size)]
    solution = solve(matrix, rhs)
    if solution is None:
        return None
    residual = sum(
        (sum(c * v for c, v in zip(solution, r, strict=True)) - y) ** 2
        for r, y in zip(rows, ys, strict=True)
    )
    return solution[1:], residual


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    size = len(rhs)
    augmented = [[*row, value] for row, value in zip(matrix, rhs, strict=True)]
    scale = max(abs(v) for row in matrix for v in row) or 1.0
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(augmented[r][col]))
        if abs(augmented[pivot][col]) < 1e-12 * scale:
            return None
        augmented[col], augmented[pivot] = augmented[pivot], augmented[col]
        for r in range(col + 1, size):
            factor = augmented[r][col] / augmented[col][col]
            for c in range(col, size + 1):
                augmented[r][c] -= factor * augmented[col][c]
    solution = [0.0] * size
    for r in reversed(range(size)):
        tail = sum(augmented[r][c] * solution[c] for c in range(r + 1, size))
        solution[r] = (augmented[r][size] - tail) / augmented[r][r]
    return solution
