"""Per thread: its share of the run and where its time went by state.

A run whose samples all weigh the same (wall mode's snapshots, python mode's, perf's
on-CPU samples) samples instants: a thread's share of a state is then a proportion of
its samples, known to within a margin that shrinks only as the square root of their
number. Wall mode at 50 snapshots a second over a 6 s run gives each thread ~300, and
a 19% share is then known to +-4.3 points (95%): one such run cannot show a 2-point
difference, so each share's margin is given beside it. Runs that measure each wait's
length (offcpu mode) have no such margin.
"""

from __future__ import annotations

import math
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


Z_95 = 1.959964  # the normal quantile of a two-sided 95% interval
SAME_WEIGHT = 1e-6  # relative spread of weight per sample still taken as one weight


def by_thread(profile: Profile) -> list[ThreadRow]:
    """One row per thread, busiest first: total weight, share of the run, and the
    fraction of the thread's own time in each state; where the run samples instants
    (the module's doc), its samples and each fraction's 95% margin."""
    weights: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    samples: dict[int, int] = defaultdict(int)
    per_sample: set[float] = set()
    for _stack, weight, count, t, state in profile.rows():
        weights[t][state or UNKNOWN_STATE] += weight
        samples[t] += count
        if count:
            per_sample.add(weight / count)
    instants = bool(per_sample) and max(per_sample) - min(per_sample) <= SAME_WEIGHT * max(
        per_sample
    )
    total = profile.total or 1.0
    rows: list[ThreadRow] = []
    for t, states in weights.items():
        thread_total = sum(states.values())
        thread = profile.threads[t] if t >= 0 else None
        row: ThreadRow = {
            "tid": thread.tid if thread else 0,
            "pid": thread.pid if thread else 0,
            "name": thread.name if thread else "",
            "total": thread_total,
            "share": thread_total / total,
            "states": {s: w / thread_total for s, w in _ordered(states).items()},
        }
        if instants and samples[t]:
            row["samples"] = samples[t]
            row["margins"] = {s: margin(f, samples[t]) for s, f in row["states"].items()}
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["total"], r["tid"]))


def margin(fraction: float, samples: int) -> float:
    """Half the width of the 95% interval of a proportion of `samples` independent
    instants (the normal approximation: the snapshots' Poisson instants are
    independent of the program, docs/offcpu.md)."""
    return Z_95 * math.sqrt(fraction * (1.0 - fraction) / samples)


def instants_for(target: float, fraction: float) -> int:
    """The instants a share `fraction` needs for its 95% margin to be `target`."""
    return math.ceil(Z_95**2 * fraction * (1.0 - fraction) / target**2)


def _ordered(states: dict[str, float]) -> dict[str, float]:
    return {s: states[s] for s in sorted(states, key=STATE_ORDER.index) if states[s] > 0}
