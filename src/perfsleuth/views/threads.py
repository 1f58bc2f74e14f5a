"""Per thread: its share of the run and where its time went by state."""

from __future__ import annotations

from collections import defaultdict

from ..model.profile import Profile
from .documents import STATE_ORDER, UNKNOWN_STATE, ThreadRow, ThreadsDoc


def document(run_id: int, profile: Profile) -> ThreadsDoc:
    """`perfsleuth threads --format json`, which the web UI's threads page also draws."""
    return {
        "run": str(run_id),
        "unit": profile.unit,
        "total": profile.total,
        "threads": by_thread(profile),
    }


def by_thread(profile: Profile) -> list[ThreadRow]:
    """One row per thread, busiest first: total weight, share of the run, and the
    fraction of the thread's own time in each state."""
    weights: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for _stack, weight, _count, t, state in profile.rows():
        weights[t][state or UNKNOWN_STATE] += weight
    total = profile.total or 1.0
    rows: list[ThreadRow] = []
    for t, states in weights.items():
        thread_total = sum(states.values())
        thread = profile.threads[t] if t >= 0 else None
        rows.append(
            {
                "tid": thread.tid if thread else 0,
                "pid": thread.pid if thread else 0,
                "name": thread.name if thread else "",
                "total": thread_total,
                "share": thread_total / total,
                "states": {s: w / thread_total for s, w in _ordered(states).items()},
            }
        )
    return sorted(rows, key=lambda r: (-r["total"], r["tid"]))


def _ordered(states: dict[str, float]) -> dict[str, float]:
    return {s: states[s] for s in sorted(states, key=STATE_ORDER.index) if states[s] > 0}
