"""Fleet queries: TopN, flame graphs, diffs and series over a time range and label filter.

The engine sums the samples per stack (the work that grows with the fleet); the
result becomes a Profile in CPU nanoseconds, so `fleet top` is `perfsleuth top`'s own
view over it, with its JSON shape and its meaning of self and total.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UserError
from ..model.fleet import PROFILE_TYPES
from ..model.profile import Frame, Profile
from ..store.fleet import FleetStore
from ..views import documents
from ..views import top as top_view
from ..views.keys import grouped_label
from . import labels
from .engine import DuckDB, Engine, RangeQuery, StackWeights
from .filters import parse, profile_type
from .retry import reading

DEFAULT_RANGE_S = 3600.0
# The Profile unit of each profile type's unit (model.profile.UNITS).
PROFILE_UNITS = {"ns": "ns", "bytes": "bytes", "count": "events"}


def time_range(start: float | None, end: float | None) -> tuple[float, float]:
    """[start, end): the last hour up to now by default."""
    end = time.time() if end is None else end
    start = end - DEFAULT_RANGE_S if start is None else start
    if start >= end:
        raise UserError("--from must be before --to")
    return start, end


def profile(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None = None,
    engine: Engine | None = None,
) -> Profile:
    """Every stored sample whose window started in [start, end) and meets `where`,
    one row per distinct stack, weights in CPU ns and counts in samples."""
    unit = PROFILE_UNITS[PROFILE_TYPES[profile_type(where)]]
    return to_profile(stack_weights(store, start, end, where, engine), unit)


def stack_weights(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None = None,
    engine: Engine | None = None,
) -> StackWeights:
    conditions = parse(where)
    run = engine or DuckDB()

    def query() -> StackWeights:
        return run.stack_weights(RangeQuery(store.select(start, end), start, end, conditions))

    weights = reading(store, query)
    return replace(weights, frames=store.name_frames(weights.frames))


def bucket_weights(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None,
    step_ms: int,
    engine: Engine | None = None,
) -> pa.Table:
    """engine.BUCKETS_SCHEMA rows: per bucket of step_ms and stack, samples and CPU ns."""
    conditions = parse(where)
    run = engine or DuckDB()
    grain = step_ms / 1000

    def query() -> pa.Table:
        selection = store.select(start, end, grain)
        return run.bucket_weights(RangeQuery(selection, start, end, conditions), step_ms)

    return reading(store, query)


def to_profile(weights: StackWeights, unit: str = "ns") -> Profile:
    """The per-stack sums as a Profile: sample i is row i of weights.stacks."""
    frames = weights.frames.drop(["frame_id"]).to_pylist()
    stacks = weights.stacks
    frame_ids = stacks.column("frame_ids").combine_chunks()
    # Each stack's frames as indexes into `frames` (its frame_id column), in Arrow.
    index = pc.index_in(frame_ids.flatten(), value_set=weights.frames.column("frame_id"))
    flat = index.to_pylist()
    bounds = frame_ids.offsets.to_pylist()
    n = stacks.num_rows
    return Profile(
        unit=unit,
        frames=[Frame(**f) for f in frames],
        stacks=[tuple(flat[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)],
        sample_stack=list(range(n)),
        sample_weight=pc.cast(stacks.column("cpu_ns"), pa.float64()).to_pylist(),
        sample_count=stacks.column("samples").to_pylist(),
        sample_thread=[-1] * n,
        sample_state=[""] * n,
    )


def top(
    store: FleetStore,
    start: float | None = None,
    end: float | None = None,
    where: str | None = None,
    by: str = "function",
    n: int = 20,
    sort: str = "self",
    engine: Engine | None = None,
) -> documents.FleetTopDoc:
    """`perfsleuth top`'s JSON document over the fleet (unit "ns"), with the range asked.

    `by` is a frame grouping (views.keys), `library` (DSOs by library name, versions
    merged) or a label: service, host or label:NAME (each value's share of the CPU time;
    the document's `label` names it and each row holds its value under that name)."""
    start, end = time_range(start, end)
    label = grouped_label(by)
    if label:
        doc = {**labels.top(store, start, end, where, label, n, engine), "by": by, "label": label}
    else:
        grouped = profile(store, start, end, where, engine)
        if by == "library":
            grouped = by_library(grouped)
        doc = top_view.top(grouped, by="dso" if by == "library" else by, sort=sort, n=n)
        doc["by"] = by
    kind = profile_type(where)
    doc["unit"] = PROFILE_TYPES[kind]
    fleet = {"run": "fleet", "from": start, "to": end, "where": where or "", "type": kind}
    return cast(documents.FleetTopDoc, {**fleet, **doc})


def by_library(profile: Profile) -> Profile:
    """The profile with each frame's DSO named by its library (libz.so.1.2.13 -> libz)."""
    frames = [replace(f, dso=library_name(f.dso)) for f in profile.frames]
    return replace(profile, frames=frames)


def library_name(dso: str) -> str:
    """A shared library's name without folder and version; other DSOs as they are."""
    name = dso.rsplit("/", 1)[-1]
    stem, found, _version = name.partition(".so")
    return stem if found and stem else name or "[unknown]"


def flame(
    store: FleetStore,
    start: float | None = None,
    end: float | None = None,
    where: str | None = None,
    engine: Engine | None = None,
) -> Profile:
    """The samples of the range as one profile: present/folded.py writes its folded stacks."""
    start, end = time_range(start, end)
    return profile(store, start, end, where, engine)


def flame_json(
    profile: Profile, start: float, end: float, where: str | None
) -> documents.FleetFlameDoc:
    """`fleet flame --format json`: each distinct stack, root first, with its CPU ns and
    samples, heaviest first (the folded stacks' content, frames as objects)."""
    sums: defaultdict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    for stack, weight, count, _thread, _state in profile.rows():
        if stack and weight:
            sums[stack][0] += weight
            sums[stack][1] += count
    frames: list[documents.FleetFrame] = [
        {"function": f.function, "dso": f.dso, "file": f.file, "line": f.line}
        for f in profile.frames
    ]
    stacks: list[documents.FleetStack] = [
        {"frames": [frames[f] for f in reversed(stack)], "cpu_ns": ns, "samples": int(n)}
        for stack, (ns, n) in sorted(sums.items(), key=lambda item: -item[1][0])
    ]
    total = sum(ns for ns, _n in sums.values())
    samples = int(sum(n for _ns, n in sums.values()))
    return {
        "from": start,
        "to": end,
        "where": where or "",
        "type": profile_type(where),
        "unit": PROFILE_TYPES[profile_type(where)],
        "total": total,
        "samples": samples,
        "stacks": stacks,
    }
