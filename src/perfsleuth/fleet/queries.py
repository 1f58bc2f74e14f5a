"""Fleet queries: TopN and flame graphs over a time range and label filter.

The engine sums the samples per stack (the work that grows with the fleet); the
result becomes a Profile in CPU nanoseconds, so `fleet top` is `perfsleuth top`'s own
view over it, with its JSON shape and its meaning of self and total.
"""

from __future__ import annotations

import time

from ..errors import UserError
from ..model.profile import Frame, Profile
from ..store.fleet import FleetStore
from ..views import top as top_view
from .engine import DuckDB, Engine
from .filters import parse

DEFAULT_RANGE_S = 3600.0
SELECT_ATTEMPTS = 3  # a compaction may delete listed files before they are read


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
    conditions = parse(where)
    engine = engine or DuckDB()
    for attempt in range(SELECT_ATTEMPTS):
        try:
            weights = engine.stack_weights(store.select(start, end), start, end, conditions)
            break
        except FileNotFoundError:
            if attempt == SELECT_ATTEMPTS - 1:
                raise UserError(
                    f"files of {store.root} keep changing under the query; retry"
                ) from None
    frames = weights.frames.to_pylist()
    index = {f.pop("frame_id"): i for i, f in enumerate(frames)}
    result = Profile(unit="ns", frames=[Frame(**f) for f in frames])
    for row in weights.stacks.to_pylist():
        result.stacks.append(tuple(index[f] for f in row["frame_ids"]))
        result.sample_stack.append(len(result.stacks) - 1)
        result.sample_weight.append(float(row["cpu_ns"]))
        result.sample_count.append(int(row["samples"]))
        result.sample_thread.append(-1)
        result.sample_state.append("")
    return result


def top(
    store: FleetStore,
    start: float | None = None,
    end: float | None = None,
    where: str | None = None,
    by: str = "function",
    n: int = 20,
    sort: str = "self",
    engine: Engine | None = None,
) -> dict:
    """`perfsleuth top`'s JSON document over the fleet (unit "ns"), with the range asked."""
    start, end = time_range(start, end)
    doc = top_view.top(profile(store, start, end, where, engine), by=by, sort=sort, n=n)
    return {"run": "fleet", "from": start, "to": end, "where": where or "", **doc}


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
