"""Exact per-function and per-line change between two count runs.

Counts are exact, so there is no noise to filter: every function and line whose
count changed is listed, largest change first, with the change in instructions
and as a share of run A's total.
"""

from __future__ import annotations

from rich.console import Console

from ..formats import count_document
from ..formats.callgrind import CallgrindData


def count_diff(a: CallgrindData, b: CallgrindData, *, event: str = "Ir", n: int = 0) -> dict:
    if event not in a.events or event not in b.events:
        event = a.events[0]
    total_a, total_b = count_document.total(a, event), count_document.total(b, event)
    functions = changes(
        count_document.function_self(a, event), count_document.function_self(b, event), total_a
    )
    lines = changes(count_document.line_self(a, event), count_document.line_self(b, event), total_a)
    limit = n if n > 0 else None
    return {
        "event": event,
        "total_a": total_a,
        "total_b": total_b,
        "delta": total_b - total_a,
        "delta_share": (total_b - total_a) / total_a if total_a else 0.0,
        "functions": [{"function": key, **row} for key, row in functions[:limit]],
        "lines": [{"file": key[0], "line": key[1], **row} for key, row in lines[:limit]],
        "functions_changed": len(functions),
        "lines_changed": len(lines),
    }


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


def render(doc: dict, console: Console) -> None:
    event = doc["event"]
    console.print(
        f"run {doc['a']} → run {doc['b']}: {doc['total_a']:,} → {doc['total_b']:,} {event} "
        f"({doc['delta']:+,}, {100 * doc['delta_share']:+.3f}%)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    _section(console, "function", doc["functions"], doc["functions_changed"], event)
    _section(console, "line", doc["lines"], doc["lines_changed"], event)


def _section(console: Console, what: str, rows: list[dict], changed: int, event: str) -> None:
    shown = f"{len(rows)} of {changed}" if len(rows) < changed else str(changed)
    console.print(
        f"\n{shown} {what}s changed", style="bold", highlight=False, markup=False, soft_wrap=True
    )
    if not rows:
        return
    console.print(
        f"{event + ' A':>15} {event + ' B':>15} {'delta':>15} {'% of A':>9}  {what}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for row in rows:
        name = row["function"] if what == "function" else f"{row['file']}:{row['line']}"
        console.print(
            f"{row['a']:>15,} {row['b']:>15,} {row['delta']:>+15,} "
            f"{100 * row['delta_share']:>+8.3f}%  {name}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
