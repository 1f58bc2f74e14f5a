"""How often this machine's prefetchers bring in the line beside one that a program
touches, measured: the share of those neighbours that the scaling projection
counts into the working set of the levels below the L1d (the model's next-line
prefetcher, model.py, brings one in on every first-level miss).

Why measure it: adjacent-line prefetchers differ between cores, and they decide
how early an object whose code touches one line overflows the L2. Intel's L2
spatial prefetcher completes every 128-byte pair; on an AMD EPYC (Zen 4) guest
the connection tables of examples/cache overflowed the L2 later than a neighbour
for every touched line says, as if it came along six times in ten.

Two chases over memory advised to transparent huge pages (so no TLB misses), in
lines touched, from a quarter of the L2 to four times it: every line of the
memory (dense), and the first line of each 128-byte slot (one field of each
object). If the neighbour of each touched line comes along a share p of the
time, the sparse chase holds 1 + p lines per line it touches, and its latency
at x lines touched is the dense chase's at (1 + p) x: p is the shift that lays
the sparse curve best onto the dense one (least squares, the dense curve
interpolated in log x). The whole curves count, not their knees: a real L2
fills gradually, and the ratio of two fitted knees swung from 0 to 1 between
sweeps where the shift stayed at 0.56-0.75 (AMD EPYC Zen 4 guest).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .model import Geometry

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
LINE = 64
SLOT = 128
POINTS = 4  # per doubling
EVIDENCE_RATIO = 1.2  # the dense chase must rise this much across the sweep
SHIFTS = [1 + k / 100 for k in range(151)]  # 1 to 2.5: past 2 is clamped, but tells
MIN_POINTS = 6


def unavailable(geometry: Geometry, thp: Path = THP) -> str | None:
    """Why the share cannot be measured here, or None."""
    if len(geometry.levels) < 2:
        return "sysfs describes a single cache level"
    try:
        if "[never]" in thp.read_text():
            return "transparent huge pages are off ([never] in " + str(thp) + ")"
    except OSError:
        return f"{thp} is missing: no transparent huge pages"
    return None


def sweep(geometry: Geometry) -> list[int]:
    """Lines touched, from a quarter of the L2 to four times it."""
    l2_lines = geometry.levels[1].size // LINE
    steps = 4 * POINTS
    return sorted({round(l2_lines / 4 * 2 ** (i / POINTS)) for i in range(steps + 1)})


def measure_once(chase_ns: Any, geometry: Geometry) -> tuple[dict[int, float], int | None, str]:
    """(ns per load of the sparse chase by lines touched, share in percent or None,
    evidence)."""
    lines = sweep(geometry)
    dense = {n: chase_ns(n, LINE, huge=True) for n in lines}
    sparse = {n: chase_ns(n, SLOT, huge=True, first_line=True) for n in lines}
    rise = dense[lines[-1]] / dense[lines[0]]
    if rise < EVIDENCE_RATIO:
        return sparse, None, f"no L2 overflow in the sweep (latency x{rise:.2f} across it)"
    shift, rms = best_shift(dense, sparse)
    share = min(1.0, max(0.0, shift - 1))
    evidence = (
        f"one line per 128 B runs as every line does with {shift:.2f}x the lines "
        f"(rms {rms:.2f} ns; every line: {dense[lines[0]]:.1f} to {dense[lines[-1]]:.1f} ns)"
    )
    return sparse, round(100 * share), evidence


def best_shift(dense: dict[int, float], sparse: dict[int, float]) -> tuple[float, float]:
    """(s, rms) of the shift s in SHIFTS that lays sparse(x) closest to dense(s * x)."""
    top = max(dense)
    fits = []
    for shift in SHIFTS:
        pairs = [(ns, at(dense, shift * x)) for x, ns in sparse.items() if shift * x <= top]
        if len(pairs) >= MIN_POINTS:
            fits.append((sum((a - b) ** 2 for a, b in pairs) / len(pairs), shift))
    error, shift = min(fits)
    return shift, math.sqrt(error)


def at(curve: dict[int, float], x: float) -> float:
    """The curve at x, interpolated linearly in log x between its points."""
    below = max((k for k in curve if k <= x), default=min(curve))
    above = min((k for k in curve if k >= x), default=max(curve))
    if above == below:
        return curve[below]
    t = math.log(x / below) / math.log(above / below)
    return curve[below] + t * (curve[above] - curve[below])
