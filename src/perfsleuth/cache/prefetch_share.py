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
object). The dense chase's knee (knee.py, with the L1d's misses in the fit) is
the lines the L2 holds, C; the sparse chase overflows when the lines it touches
and the neighbours brought in with them fill it, at C / (1 + share). So share =
dense knee / sparse knee - 1, in percent, clamped to 0..100.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .knee import knee, knee_evidence
from .model import Geometry

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
LINE = 64
SLOT = 128
POINTS = 4  # per doubling
EVIDENCE_RATIO = 1.2  # an L2 miss the LLC catches costs a few ns


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
    below = [float(geometry.levels[0].size // LINE)]
    in_lines = "{:,.0f} lines".format
    dense_knee, sparse_knee = knee(points(dense), below), knee(points(sparse), below)
    capacity, dense_said = knee_evidence(dense, dense_knee, EVIDENCE_RATIO, in_lines)
    overflow, sparse_said = knee_evidence(sparse, sparse_knee, EVIDENCE_RATIO, in_lines)
    evidence = f"every line: {dense_said}; the first of every 128 B: {sparse_said}"
    if not capacity or not overflow:
        return sparse, None, f"no clear L2 knee ({evidence})"
    share = min(1.0, max(0.0, capacity / overflow - 1))
    said = f"L2 knee at {capacity:,} lines dense, {overflow:,} lines touched one per 128 B"
    return sparse, round(100 * share), f"{said} ({evidence})"


def points(curve: dict[int, float]) -> list[tuple[float, float]]:
    return [(float(n), ns) for n, ns in curve.items() if math.isfinite(ns)]
