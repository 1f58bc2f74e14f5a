"""What changed between two runs, whatever the unit.

Both runs are reduced to a cost per key, keys are paired across the runs, and
each pair becomes a row; the largest changes come first. What a row compares
follows from what the numbers are:

* samples (or ns) are estimates whose number grows with how long a run lasted, so
  `diff` compares each key's share of its own run's total, self and total, for
  functions, lines, files or DSOs, and shows the n largest changes;
* a count run's numbers are exact (`record --mode count`), so when both runs have
  them `exact_diff` compares the counts themselves: every function and line whose
  count changed, with the change in instructions and as a share of run A's total.
  There is no noise to filter.

Functions are paired by name alone, since a rebuilt binary may have another file
name. An edit moves the lines below it, so where both runs recorded their source
files (count runs do) lines are paired by their text as it was then, not by their
number: inserting a line does not make every line after it look changed.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from ..model.counts import ExactCounts, Sources
from ..model.profile import PYTHON_DSO_PREFIX, UNKNOWN, Profile
from .documents import DiffRow
from .top import Cost, aggregate

LineKey = tuple[str, int | None, int | None]  # file, line in A, line in B


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


def exact_diff(
    a: ExactCounts,
    b: ExactCounts,
    *,
    sources: tuple[Sources, Sources] = ({}, {}),
    event: str = "Ir",
    n: int = 0,
) -> dict:
    """Exact counts per function and per line, for two count runs."""
    if event not in a.events or event not in b.events:
        event = a.events[0]
    total_a, total_b = a.total(event), b.total(event)
    functions = changes(
        a.function_self(event, merge_unnamed=True),
        b.function_self(event, merge_unnamed=True),
        total_a,
    )
    lines_a, lines_b = a.line_self(event), b.line_self(event)
    pairs = align(lines_a, lines_b, *sources)
    lines = changes(
        {key: lines_a.get((key[0], key[1] or 0), 0) for key in pairs if key[1]},
        {key: lines_b.get((key[0], key[2] or 0), 0) for key in pairs if key[2]},
        total_a,
    )
    limit = n if n > 0 else None
    return {
        "event": event,
        "total_a": total_a,
        "total_b": total_b,
        "delta": total_b - total_a,
        "delta_share": (total_b - total_a) / total_a if total_a else 0.0,
        "functions": [{"function": key, **row} for key, row in functions[:limit]],
        "lines": [_line_row(key, row, sources) for key, row in lines[:limit]],
        "functions_changed": len(functions),
        "lines_changed": len(lines),
    }


def align(
    a: dict[tuple[str, int], int], b: dict[tuple[str, int], int], src_a: Sources, src_b: Sources
) -> list[LineKey]:
    """Counted lines of both runs, paired file by file: by text where both runs kept
    their source lines, else by number. Unpaired lines have None on the other side."""
    by_file_a, by_file_b = _lines_by_file(a), _lines_by_file(b)
    pairs: list[LineKey] = []
    for file in sorted(by_file_a.keys() | by_file_b.keys()):
        la, lb = by_file_a.get(file, set()), by_file_b.get(file, set())
        if file in src_a and file in src_b:
            pairs += _by_text(file, sorted(la), sorted(lb), src_a[file], src_b[file])
        else:
            pairs += [
                (file, n if n in la else None, n if n in lb else None) for n in sorted(la | lb)
            ]
    return pairs


def _lines_by_file(counted: dict[tuple[str, int], int]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for file, line in counted:
        out.setdefault(file, set()).add(line)
    return out


def _by_text(
    file: str, la: list[int], lb: list[int], text_a: list[str], text_b: list[str]
) -> list[LineKey]:
    # A line whose text is unknown gets a placeholder that matches nothing.
    words_a = [_text(text_a, n) or f"\0a{n}" for n in la]
    words_b = [_text(text_b, n) or f"\0b{n}" for n in lb]
    matcher = SequenceMatcher(None, words_a, words_b, autojunk=False)
    paired_a: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            paired_a[la[block.a + k]] = lb[block.b + k]
    paired_b = set(paired_a.values())
    pairs: list[LineKey] = [(file, n, paired_a.get(n)) for n in la]
    return pairs + [(file, None, n) for n in lb if n not in paired_b]


def _line_row(key: LineKey, row: dict, sources: tuple[Sources, Sources]) -> dict:
    file, line_a, line_b = key
    text = _text(sources[1].get(file, []), line_b) or _text(sources[0].get(file, []), line_a)
    line = line_b or line_a or 0
    return {"file": file, "line": line, "line_a": line_a, "line_b": line_b, "source": text, **row}


def _text(lines: list[str], number: int | None) -> str | None:
    return lines[number - 1] if number and 0 < number <= len(lines) else None


def changes(a: dict, b: dict, total_a: int) -> list[tuple]:
    """(key, {"a", "b", "delta", "delta_share"}) for every key whose count changed."""
    rows = []
    for key in set(a) | set(b):
        before, after = a.get(key, 0), b.get(key, 0)
        if before != after:
            delta = after - before
            share = delta / total_a if total_a else 0.0
            rows.append((key, {"a": before, "b": after, "delta": delta, "delta_share": share}))
    rows.sort(key=lambda item: (-abs(item[1]["delta"]), str(item[0])))
    return rows
