"""TopN: self and total (inclusive) cost per function, line, file or DSO.

Self counts a sample for its leaf frame's group; total counts it once for every
group on its stack (recursion is not counted twice), as `perf report
--no-children` / `--children` do. A count run's top (`exact_top`) is read from its
exact counts instead: self is exact; total adds the calls' inclusive cost.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.profile import Frame, Profile
from .keys import frame_keys

# types alone: the documents' module loads the models of every document (`import` keeps a
# TopN page and needs none of them)
if TYPE_CHECKING:
    from ..model.counts import ExactCounts
    from .documents import TopRow


@dataclass
class Cost:
    self: float = 0.0
    total: float = 0.0


def aggregate(profile: Profile, by: str = "function") -> dict[tuple, Cost]:
    """Absolute self and total weight per group key."""
    per_frame, keys = frame_keys(profile, by)
    self_w = [0.0] * len(keys)
    total_w = [0.0] * len(keys)
    stack_groups: dict[int, tuple[int, ...]] = {}
    for sid, weight in zip(profile.sample_stack, profile.sample_weight, strict=True):
        stack = profile.stacks[sid]
        if not stack:
            continue
        self_w[per_frame[stack[0]]] += weight
        groups = stack_groups.get(sid)
        if groups is None:
            groups = stack_groups[sid] = tuple({per_frame[f] for f in stack})
        for g in groups:
            total_w[g] += weight
    return {keys[i]: Cost(self_w[i], total_w[i]) for i in range(len(keys)) if total_w[i]}


def representative_frames(profile: Profile, by: str) -> dict[tuple, Frame]:
    """For each group, the frame with the smallest known line (the function's start)."""
    per_frame, keys = frame_keys(profile, by)
    best: dict[int, Frame] = {}
    for fid, frame in enumerate(profile.frames):
        g = per_frame[fid]
        cur = best.get(g)
        if cur is None or (frame.line and (not cur.line or frame.line < cur.line)):
            best[g] = frame
    return {keys[g]: f for g, f in best.items()}


def top(profile: Profile, *, by: str = "function", sort: str = "self", n: int = 20) -> dict:
    """The `perfsleuth top --format json` document (without the run id)."""
    total = profile.total
    costs = aggregate(profile, by)
    frames = representative_frames(profile, by)
    order = sorted(
        costs.items(),
        key=lambda kv: (-getattr(kv[1], sort), -kv[1].total, kv[0]),
    )
    rows: list[TopRow] = []
    for key, cost in order[: n if n > 0 else None]:
        f = frames[key]
        rows.append(
            {
                "function": f.function if by in ("function", "line") else "",
                "dso": f.dso if by != "file" else "",
                "file": f.file if by != "dso" else "",
                "line": f.line if by == "line" else (f.line if by == "function" else 0),
                "self": cost.self / total if total else 0.0,
                "total": cost.total / total if total else 0.0,
            }
        )
    return {
        "unit": profile.unit,
        "total": total,
        "samples": profile.num_samples,
        "by": by,
        "rows": rows,
    }


def exact_top(exact: ExactCounts, *, by: str = "function", sort: str = "self", n: int = 20) -> dict:
    """The `top` document of a count run, from its exact counts: self is each group's
    own count; total adds the inclusive cost of the calls that leave the group (a call
    within it is counted in its own lines already), at most the run's total."""
    from ..model.counts import EVENT_UNITS  # a count run's: a sampled run's top needs none

    event = "Ir" if "Ir" in exact.events else exact.events[0]
    total = exact.total(event)
    group = _ExactGroups(exact, by)
    cells = exact.cells
    keys = [
        group.of_cell(fid, file, line)
        for fid, file, line in zip(
            cells.column("fn"), cells.column("file"), cells.column("line"), strict=True
        )
    ]
    # every event's self count (cg_annotate's columns): Ir, and D1/LL misses with --cache-sim
    per_event: dict[str, dict] = {name: defaultdict(int) for name in exact.events}
    for name, counts in per_event.items():
        for key, cost in zip(keys, cells.event(exact.index(name)), strict=True):
            counts[key] += cost
    self_cost = per_event[event]
    total_cost = dict(self_cost)
    for caller, callee, file, line, cost in exact.call_edges(event):
        key = group.of_call(caller, callee, file, line)
        if key is not None:
            total_cost[key] = total_cost.get(key, 0) + cost
    bounded: set[object] = set()
    if by == "function":  # a recursion through another function is in its calls again
        total_cost.update(exact.first_level_inclusive(event))
        bounded = _bound_deeper_levels(exact, total_cost)
    order = sorted(
        total_cost,
        key=lambda k: (-(self_cost.get(k, 0) if sort == "self" else total_cost[k]), -total_cost[k]),
    )
    rows = [
        {
            **group.row(key),
            "self": self_cost.get(key, 0) / total if total else 0.0,
            "total": min(total_cost[key], total) / total if total else 0.0,
            "counts": {name: int(per_event[name].get(key, 0)) for name in exact.events},
            **({"total_at_most": True} if key in bounded else {}),
        }
        for key in order[: n if n > 0 else None]
    ]
    return {
        "unit": EVENT_UNITS.get(event, "events"),
        "total": total,
        "samples": 0,
        "exact": event,
        "events": list(exact.events),
        "inclusive": len(exact.calls) > 0,
        "by": by,
        "rows": rows,
    }


def _bound_deeper_levels(exact: ExactCounts, total_cost: dict) -> set[object]:
    """Cap each deeper recursion level's total (f'2, with the levels apart) at its first
    level's, which holds it, and return the ids capped. Its calls out nest in one another
    when its recursion goes through other functions (mujs's js_call'2 -> jsR_run'2 ->
    js_call'2: 389% of the run, as callgrind_annotate says, shown as 100% until
    2026-12-08), and the counted calls cannot say how much of the run is under it: its
    first level's total (96.71%) is the least they prove it is within."""
    capped: set[object] = set()
    for deeper, first in exact.first_level_ids().items():
        bound = total_cost.get(first)
        if bound is not None and total_cost.get(deeper, 0) > bound:
            total_cost[deeper] = bound
            capped.add(deeper)
    return capped


class _ExactGroups:
    """Group keys of a count run's cells and call sites for one `--by`."""

    def __init__(self, exact: ExactCounts, by: str) -> None:
        self.exact = exact
        self.by = by
        self.sites = exact.entry_sites() if by == "function" else []

    def of_cell(self, fid: int, file: int, line: int) -> object:
        if self.by == "function":
            return fid
        if self.by == "line":
            return (fid, file, line)
        if self.by == "file":
            return file
        return self.exact.functions[fid][0]

    def of_call(self, caller: int, callee: int, file: int, line: int) -> object | None:
        """The caller's group, or None when the callee's cost stays in that group."""
        functions, own = self.exact.functions, self.exact.own_files
        if self.by == "function":
            return caller if caller != callee else None
        if self.by == "line":
            return (caller, file, line)
        if self.by == "file":
            return file if own[callee] != file else None
        return functions[caller][0] if functions[caller][0] != functions[callee][0] else None

    def row(self, key: object) -> dict:
        exact = self.exact
        if self.by == "function":
            fid = int(key)  # type: ignore[call-overload]
            file, line = self.sites[fid]
            ob, fn = exact.functions[fid]
            return {"function": fn, "dso": ob, "file": file, "line": line}
        if self.by == "line":
            fid, file, line = key  # type: ignore[misc]
            ob, fn = exact.functions[fid]
            return {"function": fn, "dso": ob, "file": exact.files[file], "line": line}
        if self.by == "file":
            return {"function": "", "dso": "", "file": exact.files[int(key)], "line": 0}  # type: ignore[call-overload]
        return {"function": "", "dso": str(key), "file": "", "line": 0}
