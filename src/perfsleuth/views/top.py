"""TopN: self and total (inclusive) cost per function, line, file or DSO.

Self counts a sample for its leaf frame's group; total counts it once for every
group on its stack (recursion is not counted twice), as `perf report
--no-children` / `--children` do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.profile import Frame, Profile
from .keys import frame_keys


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
    rows = []
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
