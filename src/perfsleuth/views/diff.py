"""What changed between two runs, whatever the unit.

Both runs are reduced to a cost per key, keys are paired across the runs, and
each pair becomes a row; the largest changes come first. What a row compares
follows from what the numbers are:

* samples (or ns) are estimates whose number grows with how long a run lasted, so
  `diff` compares each key's share of its own run's total, self and total, for
  functions, lines, files or DSOs, and shows the n largest changes;
* a count run's numbers are exact (`record --mode count`), so when both runs have
  them count_diff.py compares the counts themselves.

Functions are paired by name alone, since a rebuilt binary may have another file
name.
"""

from __future__ import annotations

from ..model.profile import PYTHON_DSO_PREFIX, UNKNOWN, Profile
from .documents import DiffRow
from .top import Cost, aggregate


def by_name(costs: dict[tuple, Cost], by: str) -> dict[tuple, Cost]:
    """Functions matched across runs by name alone: a rebuilt binary may have
    another file name (prog vs prog-O3), and it is still the same function. A
    Python function keeps its module (`[python:json]`: a native function of the
    same name is another), and a nameless frame its DSO (else every library's
    `[unknown]` adds up to more than the run)."""
    if by not in ("function", "line"):
        return costs
    merged: dict[tuple, Cost] = {}
    for key, cost in costs.items():
        kept = key[1] if key[0] == UNKNOWN or key[1].startswith(PYTHON_DSO_PREFIX) else ""
        name_key = (key[0], kept, *key[2:])
        got = merged.setdefault(name_key, Cost())
        got.self += cost.self
        got.total += cost.total
    return merged


def diff(a: Profile, b: Profile, *, by: str = "function", n: int = 30) -> dict:
    """Shares of each run's total per key, for sampled runs."""
    ca, cb = by_name(aggregate(a, by), by), by_name(aggregate(b, by), by)
    ta, tb = a.total or 1.0, b.total or 1.0
    rows = [_share_row(key, ca.get(key), cb.get(key), ta, tb, by) for key in set(ca) | set(cb)]
    rows.sort(key=lambda r: (-abs(r["delta_self"]), -abs(r["delta_total"]), r["function"]))
    return {
        "unit": a.unit if a.unit == b.unit else f"{a.unit}/{b.unit}",
        "total_a": a.total,
        "total_b": b.total,
        "by": by,
        "rows": rows[: n if n > 0 else None],
    }


def _share_row(
    key: tuple, ca: Cost | None, cb: Cost | None, ta: float, tb: float, by: str
) -> DiffRow:
    a, b = ca or Cost(), cb or Cost()
    named = by in ("function", "line")
    return {
        "function": key[0] if named else "",
        "dso": key[1] if named else key[0] if by == "dso" else "",
        "file": key[2] if by == "line" else key[0] if by == "file" else "",
        "line": key[3] if by == "line" else 0,
        "self_a": a.self / ta,
        "self_b": b.self / tb,
        "delta_self": b.self / tb - a.self / ta,
        "total_a": a.total / ta,
        "total_b": b.total / tb,
        "delta_total": b.total / tb - a.total / ta,
        "abs_a": a.self,
        "abs_b": b.self,
    }
