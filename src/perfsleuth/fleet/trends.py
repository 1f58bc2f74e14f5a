"""What changed across the fleet: `fleet diff` (two ranges or two label sets) and
`fleet series` (one function's share per time bucket).

A diff is views/diff.py's over two fleet profiles, each side normalised to its own
total, so a side with more hosts or a longer range does not look heavier. A series
asks the engine once per bucket; buckets on whole minutes and hours read the store's
rollups (store/fleet/reading.py picks the level per partition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UserError
from ..model.profile import Profile
from ..store.fleet import FleetStore
from ..views import diff as diff_view
from .engine import Engine
from .queries import profile

SERIES_BUCKETS = 24  # buckets of a series when no --step is given


@dataclass(frozen=True)
class Side:
    """One side of a diff: a time range and a label filter."""

    start: float
    end: float
    where: str = ""

    def to_json(self) -> dict:
        return {"from": self.start, "to": self.end, "where": self.where}


def diff(
    store: FleetStore,
    a: Side,
    b: Side,
    *,
    by: str = "function",
    n: int = 30,
    engine: Engine | None = None,
) -> dict:
    """views.diff's document (shares of each side's total, largest changes first)."""
    pa_, pb = (profile(store, s.start, s.end, s.where or None, engine) for s in (a, b))
    for name, side, got in (("A", a, pa_), ("B", b, pb)):
        if not got.sample_stack:
            where = f" where {side.where}" if side.where else ""
            raise UserError(f"side {name} has no samples{where}: widen its range or filter")
    return {"a": a.to_json(), "b": b.to_json(), **diff_view.diff(pa_, pb, by=by, n=n)}


def bucket_step(start: float, end: float) -> float:
    """About SERIES_BUCKETS buckets, each a whole number of minutes (hours past a day)."""
    unit = 3600 if end - start > 86400 else 60
    return max(1, math.ceil((end - start) / SERIES_BUCKETS / unit)) * unit


def series(
    store: FleetStore,
    function: str,
    start: float,
    end: float,
    *,
    where: str | None = None,
    step: float | None = None,
    engine: Engine | None = None,
) -> dict:
    """The share of `function` (any DSO) in each bucket of [start, end): self and total."""
    step = step or bucket_step(start, end)
    if step <= 0:
        raise UserError("--step must be positive")
    points = []
    edge = start
    while edge < end:
        upper = min(end, (edge // step + 1) * step)
        points.append(_point(profile(store, edge, upper, where, engine), function, edge, upper))
        edge = upper
    if not any(p["total"] for p in points):
        raise UserError(f"no samples of {function!r} in this range: check the name with fleet top")
    return {
        "function": function,
        "from": start,
        "to": end,
        "where": where or "",
        "step": step,
        "unit": "ns",
        "points": points,
    }


def _point(got: Profile, function: str, start: float, end: float) -> dict:
    """A bucket: its CPU time and the function's self and total share of it."""
    named = {i for i, f in enumerate(got.frames) if f.function == function}
    self_w = total_w = 0.0
    for sid, weight in zip(got.sample_stack, got.sample_weight, strict=True):
        stack = got.stacks[sid]
        if stack and stack[0] in named:
            self_w += weight
        if named.intersection(stack):
            total_w += weight
    cpu = got.total
    return {
        "from": start,
        "to": end,
        "cpu_ns": cpu,
        "samples": got.num_samples,
        "self": self_w / cpu if cpu else 0.0,
        "total": total_w / cpu if cpu else 0.0,
    }
