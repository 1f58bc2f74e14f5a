"""A working set that grows by doubling: pages against n as a step function.

A hash table's bucket array (Verstable's, stb_ds's index, GLib's) is reallocated
at twice its size when its load passes a maximum, and every lookup touches pages
all over it, so the pages it takes are those of its capacity, not of n: constant
between two doublings, twice as many after. A straight line through runs that all
sit just after a doubling (500, 1,000 and 2,000 keys in Verstable's 1,024, 2,048
and 4,096 buckets, 0.49 load) extrapolates that phase's pages per n, and puts the
TLB's cliff where the line crosses the reach (84,722 keys) when it comes at the
doubling that takes the buckets past it (117,965: 2,368 pages before it, 4,736
after, of a 3,113-page reach).

The model here: pages = a + b*n + c*s(n), where s(n) = t * 2^k, the smallest such
value at or above n (the n at which the table doubles next), t the n of one of its
doublings: a, b and c fitted by least squares for each t over an octave, the best
t kept. Runs that catch the table on both sides of a doubling and inside a phase
fix where it doubles to within the gap between two runs (`doubles_between`): the
doubling is put at the geometric middle of that gap. It is taken over the line
only when the line misses what the steps explain (STEP_GAIN) and the steps are a
real part of the pages (STEP_SHARE): three runs at one phase each fit a line
exactly, and say nothing of steps."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model.cpu_cache import PageSteps, TlbCliff
from .knee import least_squares

GRID = 256  # values of t tried over one octave
MIN_RUNS = 5  # four parameters (a, b, c, t): one run more than that
# the steps must leave at most this share of the line's squared error ...
STEP_GAIN = 0.1
# ... and be at least this share of the pages at the largest run
STEP_SHARE = 0.1


Points = Sequence[tuple[float, float]]


def capacity_n(n: float, doubles_at: float) -> float:
    """s(n): the n at which a table that doubles after `doubles_at` * 2^k doubles next."""
    return doubles_at * 2 ** math.ceil(math.log2(n / doubles_at) - 1e-12)


def steps(points: Points) -> PageSteps | None:
    """The step fit of pages against n, when the runs show steps; None otherwise."""
    if len(points) < MIN_RUNS:
        return None
    line = least_squares([[n for n, _ in points]], [p for _, p in points])
    best = min(
        (fitted for t in octave(points) if (fitted := solve_at(points, t)) is not None),
        key=lambda fitted: fitted[1],
        default=None,
    )
    if line is None or best is None or best[1] > STEP_GAIN * line[1]:
        return None
    low, high = (2 * edge for edge in bracket(points, best[2]))  # the doubling inside the runs
    middle = math.sqrt(low * high)
    at_middle = solve_at(points, middle)
    if at_middle is None:
        return None
    (a, b, c), _, t = at_middle
    largest = max(n for n, _ in points)
    pages = a + b * largest + c * capacity_n(largest, t)
    if c <= 0 or c * capacity_n(largest, t) < STEP_SHARE * pages:
        return None
    return {
        "intercept": a,
        "per_n": b,
        "per_capacity_n": c,
        "doubles_at_n": middle,
        "doubles_between": [low, high],
    }


def octave(points: Points) -> list[float]:
    smallest = min(n for n, _ in points)
    return [smallest * 2 ** (-step / GRID) for step in range(GRID)]


def solve_at(points: Points, t: float) -> tuple[list[float], float, float] | None:
    """((a, b, c), squared error, t) of the fit with the doublings at t * 2^k. Pages
    never shrink as n grows: where the free fit's b comes out below 0 (a phase's flat
    pages a little uneven: tsl::hopscotch_map's 23, 23, ... then 42, 42, ... gave
    b = -0.0006 per n, and the steps were refused for it), b is held at 0."""
    capacities = [capacity_n(n, t) for n, _ in points]
    pages = [p for _, p in points]
    solved = least_squares([[n for n, _ in points], capacities], pages)
    if solved is not None and solved[0][0] < 0:
        alone = least_squares([capacities], pages)
        solved = ([0.0, alone[0][0]], alone[1]) if alone is not None else None
    if solved is None:
        return None
    (b, c), error = solved
    a = sum(p - b * n - c * s for (n, p), s in zip(points, capacities, strict=True)) / len(points)
    return [a, b, c], error, t


def bracket(points: Points, t: float) -> tuple[float, float]:
    """The doubling's t as far as the runs place it: every doubling t * 2^k inside
    the runs lies between the run before it and the run after, scaled back by 2^k;
    their common part. (t itself, when no doubling falls between two runs.)"""
    ns = sorted(n for n, _ in points)
    low, high = 0.0, math.inf
    for k in range(math.floor(math.log2(ns[0] / t)), math.ceil(math.log2(ns[-1] / t)) + 1):
        at = t * 2**k
        before = [n for n in ns if n <= at]
        after = [n for n in ns if n > at]
        if before and after:
            low, high = max(low, before[-1] / 2**k), min(high, after[0] / 2**k)
    if not low < high < math.inf:
        return t, t
    return low, high


def pages_at(fitted: PageSteps, n: float) -> float:
    at = fitted["doubles_at_n"]
    return fitted["intercept"] + fitted["per_n"] * n + fitted["per_capacity_n"] * capacity_n(n, at)


def crossing(fitted: PageSteps, reach: float, limit: int) -> int | None:
    """The smallest n at which the pages reach `reach`: just past the doubling that
    takes them over it, or inside a phase where they grow with n; None up to
    `limit`."""
    t, b = fitted["doubles_at_n"], fitted["per_n"]
    k = math.ceil(math.log2(1 / t))
    while t * 2 ** (k - 1) < limit:
        start, end = t * 2 ** (k - 1), t * 2**k
        if pages_at(fitted, start + 1) >= reach:
            return math.floor(start) + 1
        if b > 0 and pages_at(fitted, end) >= reach:
            return math.ceil((reach - fitted["intercept"] - fitted["per_capacity_n"] * end) / b)
        k += 1
    return None


def pages_text(tlb: TlbCliff, runs: int) -> str:
    """The fit of the pages against n over RUNS scaled runs: a line, or a table's
    doubling steps. A line through fewer runs than the steps need says so: three runs
    (docs' `--scale` example) each fit a line and cannot show a doubling."""
    line = f"{tlb['intercept_pages']:.0f} + {tlb['pages_per_n']:.4f} * n"
    if "steps" not in tlb:
        if runs < MIN_RUNS:
            line += (
                f" (a line through {runs} runs: {MIN_RUNS} or more --scale sizes would "
                "show a table that grows by doubling, whose pages come in steps)"
            )
        return line
    steps = tlb["steps"]
    low, high = steps["doubles_between"]
    return (
        f"{line} + {steps['per_capacity_n']:.4f} * capacity (the n at which the table "
        f"doubles next; it doubles past {steps['doubles_at_n']:,.0f} * 2^k, the runs put "
        f"that between {low:,.0f} and {high:,.0f})"
    )


def page_size_text(tlb: TlbCliff) -> str:
    """The pages the cliff is counted in, and why a program's data is on them: the
    kernel's transparent huge page mode when the scaling was projected (runs stored
    before it was kept do not say)."""
    mode = tlb.get("transparent_huge_pages")
    if not mode:
        return "4 KiB pages"
    unless = " unless it asks for huge pages" if mode == "madvise" else ""
    return (
        f"4 KiB pages: transparent huge pages are `{mode}` on this machine, so a program's "
        f"malloc'd data is on 4 KiB pages{unless}"
    )
