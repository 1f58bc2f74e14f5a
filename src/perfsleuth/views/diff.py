"""Per-function change between two runs, each normalised to its own total."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..model.profile import Profile
from ..present.output import cell, pct
from .top import Cost, aggregate


def by_name(costs: dict[tuple, Cost], by: str) -> dict[tuple, Cost]:
    """Functions matched across runs by name alone: a rebuilt binary may have
    another file name (prog vs prog-O3), and it is still the same function."""
    if by not in ("function", "line"):
        return costs
    merged: dict[tuple, Cost] = {}
    for key, cost in costs.items():
        name_key = (key[0], "", *key[2:])
        got = merged.setdefault(name_key, Cost())
        got.self += cost.self
        got.total += cost.total
    return merged


def diff(a: Profile, b: Profile, *, by: str = "function", n: int = 30) -> dict:
    ca, cb = by_name(aggregate(a, by), by), by_name(aggregate(b, by), by)
    ta, tb = a.total or 1.0, b.total or 1.0
    rows: list[dict[str, Any]] = []
    for key in set(ca) | set(cb):
        sa = ca[key].self / ta if key in ca else 0.0
        sb = cb[key].self / tb if key in cb else 0.0
        xa = ca[key].total / ta if key in ca else 0.0
        xb = cb[key].total / tb if key in cb else 0.0
        rows.append(
            {
                "function": key[0] if by in ("function", "line") else "",
                "dso": key[1] if by in ("function", "line") else key[0] if by == "dso" else "",
                "file": key[2] if by == "line" else key[0] if by == "file" else "",
                "line": key[3] if by == "line" else 0,
                "self_a": sa,
                "self_b": sb,
                "delta_self": sb - sa,
                "total_a": xa,
                "total_b": xb,
                "delta_total": xb - xa,
                "abs_a": ca[key].self if key in ca else 0.0,
                "abs_b": cb[key].self if key in cb else 0.0,
            }
        )
    rows.sort(key=lambda r: (-abs(r["delta_self"]), -abs(r["delta_total"]), r["function"]))
    return {
        "unit": a.unit if a.unit == b.unit else f"{a.unit}/{b.unit}",
        "total_a": a.total,
        "total_b": b.total,
        "by": by,
        "rows": rows[: n if n > 0 else None],
    }


def render(doc: dict, console: Console) -> None:
    ratio = doc["total_b"] / doc["total_a"] if doc["total_a"] else 0.0
    table = Table(
        title=f"run {doc['a']} → run {doc['b']}: total {doc['total_a']:,.0f} → "
        f"{doc['total_b']:,.0f} {doc['unit']} ({ratio:.3f}×); shares of each run's total",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    for col in ("self A", "self B", "Δ self", "total A", "total B", "Δ total"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column(doc["by"], overflow="fold")
    for r in doc["rows"]:
        name = r["function"] or r["file"] or r["dso"]
        if doc["by"] == "line":
            name = f"{r['function']} {r['file']}:{r['line']}"
        table.add_row(
            pct(r["self_a"]),
            pct(r["self_b"]),
            _signed(r["delta_self"]),
            pct(r["total_a"]),
            pct(r["total_b"]),
            _signed(r["delta_total"]),
            cell(name),
        )
    console.print(table)


def _signed(fraction: float) -> str:
    return f"{100.0 * fraction:+7.2f}%"
