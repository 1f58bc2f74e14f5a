"""What changed across the fleet: `fleet diff` (two ranges or two label sets) and
`fleet series` (one function's share per time bucket).

A diff is views/diff.py's over two fleet profiles, each side normalised to its own
total, so a side with more hosts or a longer range does not look heavier. A series
asks the engine twice: the stacks of the range (to find the function's), and the sums
per bucket and stack; buckets of whole minutes and hours read the store's rollups
(store/fleet/reading.py picks the level per partition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from ..errors import UserError
from ..model.fleet import PROFILE_TYPES
from ..model.profile import Profile
from ..store.fleet import FleetStore
from ..views import diff as diff_view
from ..views import documents
from .engine import Engine, StackWeights, to_ms
from .filters import profile_type
from .queries import bucket_weights, profile, stack_weights

SERIES_BUCKETS = 24  # buckets of a series when no --step is given
MAX_BUCKETS = 20_000  # buckets of one series: a week of minutes fits, with both ends cut
MIN_STEP_S = 1.0


@dataclass(frozen=True)
class Side:
    """One side of a diff: a time range and a label filter."""

    start: float
    end: float
    where: str = ""

    def to_json(self) -> documents.FleetRange:
        return {"from": self.start, "to": self.end, "where": self.where}


def diff(
    store: FleetStore,
    a: Side,
    b: Side,
    *,
    by: str = "function",
    n: int = 30,
    engine: Engine | None = None,
) -> documents.FleetDiffDoc:
    """views.diff's document (shares of each side's total, largest changes first)."""
    pa_, pb = side_profiles(store, a, b, engine)
    doc = {"a": a.to_json(), "b": b.to_json(), **diff_view.diff(pa_, pb, by=by, n=n)}
    return cast(documents.FleetDiffDoc, doc)


def side_profiles(
    store: FleetStore, a: Side, b: Side, engine: Engine | None = None
) -> tuple[Profile, Profile]:
    """The samples of side A and of side B; a side without samples is a UserError."""
    pa_, pb = (profile(store, s.start, s.end, s.where or None, engine) for s in (a, b))
    for name, side, got in (("A", a, pa_), ("B", b, pb)):
        if not got.sample_stack:
            where = f" where {side.where}" if side.where else ""
            raise UserError(f"side {name} has no samples{where}: widen its range or filter")
    return pa_, pb


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
) -> documents.FleetSeriesDoc:
    """The share of `function` (any DSO) in each bucket of [start, end): self and total.
    Buckets are multiples of `step` from the epoch (the first and last cut by the range),
    summed by the engine in one query."""
    step = step or bucket_step(start, end)
    named = stack_weights(store, start, end, where, engine)
    leaf, anywhere = _stacks_with(named, function)
    if not anywhere:
        raise UserError(f"no samples of {function!r} in this range: check the name with fleet top")
    points = _points(store, start, end, where, step, engine, leaf, anywhere)
    return {"function": function, **_series_doc(start, end, where, step, points)}


def cpu_series(
    store: FleetStore,
    start: float,
    end: float,
    *,
    where: str | None = None,
    step: float | None = None,
    engine: Engine | None = None,
) -> documents.FleetCpuDoc:
    """The CPU time of the range in each bucket (the Fleet page's timeline): series()
    without a function, each point's `cpu_ns` and samples."""
    step = step or bucket_step(start, end)
    points = _points(store, start, end, where, step, engine, set(), set())
    return _series_doc(start, end, where, step, points)


def _series_doc(
    start: float, end: float, where: str | None, step: float, points: list[documents.FleetPoint]
) -> documents.FleetCpuDoc:
    return {
        "from": start,
        "to": end,
        "where": where or "",
        "step": step,
        "type": profile_type(where),
        "unit": PROFILE_TYPES[profile_type(where)],
        "points": points,
    }


def _points(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None,
    step: float,
    engine: Engine | None,
    leaf: set,
    anywhere: set,
) -> list[documents.FleetPoint]:
    """Each bucket of [start, end): its samples and CPU time, and the shares of the
    stacks `leaf` (self) and `anywhere` (total) in it, summed by the engine in one query."""
    step_ms = _step_ms(start, end, step)
    rows = bucket_weights(store, start, end, where, step_ms, engine).to_pydict()
    sums: dict[int, list[int]] = {}
    for bucket, stack, samples, cpu in zip(
        rows["bucket"], rows["stack_id"], rows["samples"], rows["cpu_ns"], strict=True
    ):
        point = sums.setdefault(bucket, [0, 0, 0, 0])
        point[0] += samples
        point[1] += cpu
        point[2] += cpu if stack in leaf else 0
        point[3] += cpu if stack in anywhere else 0
    first, last = math.floor(to_ms(start) / step_ms), math.ceil(to_ms(end) / step_ms)
    return [
        _point(
            sums.get(b, [0, 0, 0, 0]),
            max(start, b * step_ms / 1000),
            min(end, (b + 1) * step_ms / 1000),
        )
        for b in range(first, last)
    ]


def _step_ms(start: float, end: float, step: float) -> int:
    """The step in whole milliseconds, at least MIN_STEP_S, giving at most MAX_BUCKETS."""
    if not step >= MIN_STEP_S:
        raise UserError(f"--step must be at least {MIN_STEP_S:g}s")
    step_ms = round(step * 1000)
    buckets = math.ceil(to_ms(end) / step_ms) - math.floor(to_ms(start) / step_ms)
    if buckets > MAX_BUCKETS:
        raise UserError(
            f"--step {_duration(step)} makes {buckets:,} buckets of this range; at most "
            f"{MAX_BUCKETS:,}: use --step {_duration(_smallest_step(start, end))} or more"
        )
    return step_ms


def _smallest_step(start: float, end: float) -> float:
    """The smallest step, in whole seconds, minutes, hours or days, within MAX_BUCKETS."""
    need = (end - start) / (MAX_BUCKETS - 2)  # the first and last bucket may be cut
    unit = next(u for u in (86400, 3600, 60, 1) if need >= u or u == 1)
    return math.ceil(need / unit) * unit


def _duration(seconds: float) -> str:
    for unit, name in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= unit and seconds % unit == 0:
            return f"{seconds // unit:g}{name}"
    return f"{seconds:g}s"


def _stacks_with(weights: StackWeights, function: str) -> tuple[set[int], set[int]]:
    """The ids of the stacks whose leaf is `function`, and of those holding it anywhere."""
    frames = weights.frames
    named = {
        fid
        for fid, name in zip(
            frames["frame_id"].to_pylist(), frames["function"].to_pylist(), strict=True
        )
        if name == function
    }
    leaf: set[int] = set()
    anywhere: set[int] = set()
    stacks = weights.stacks
    for sid, frame_ids in zip(
        stacks["stack_id"].to_pylist(), stacks["frame_ids"].to_pylist(), strict=True
    ):
        if frame_ids and frame_ids[0] in named:
            leaf.add(sid)
        if named.intersection(frame_ids):
            anywhere.add(sid)
    return leaf, anywhere


def _point(sums: list[int], start: float, end: float) -> documents.FleetPoint:
    """A bucket: its CPU time and the function's self and total share of it."""
    samples, cpu, self_cpu, total_cpu = sums
    return {
        "from": start,
        "to": end,
        "cpu_ns": float(cpu),
        "samples": samples,
        "self": self_cpu / cpu if cpu else 0.0,
        "total": total_cpu / cpu if cpu else 0.0,
    }
