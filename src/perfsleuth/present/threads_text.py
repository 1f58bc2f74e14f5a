"""Threads as text: per thread, its time and the share of it in each state."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..views.documents import STATE_ORDER
from ..views.threads import instants_for
from .output import pct

TWO_POINTS = 0.02  # issue 29's agreement with the program's own clock


def render(doc: dict[str, Any], console: Console) -> None:
    states = [s for s in STATE_ORDER if any(s in r["states"] for r in doc["threads"])]
    table = Table(
        title=f"run {doc['run']} — {len(doc['threads'])} threads, time by state",
        title_justify="left",
        box=None,
    )
    table.add_column("tid", justify="right")
    table.add_column("name")
    table.add_column(_total_label(doc["unit"]), justify="right")
    for s in states:
        table.add_column(s, justify="right")
    for r in doc["threads"]:
        cells = [_cell(r, s) for s in states]
        table.add_row(str(r["tid"]), r["name"], _amount(r["total"], doc["unit"]), *cells)
    console.print(table)
    counted = sorted({r["samples"] for r in doc["threads"] if any(r.get("margins", {}).values())})
    if counted:
        spread = f"{counted[0]:,}" + (f"–{counted[-1]:,}" if len(counted) > 1 else "")
        console.print(
            f"±: the 95% margin of a share of {spread} sampled instants a thread "
            "(narrower with more: --freq or a longer run)",
            highlight=False,
        )
        console.print(_two_points(doc["threads"]), highlight=False)


def _two_points(rows: list[dict[str, Any]]) -> str:
    """What issue 29's 2 points would take: the instants of the thread that needs the
    most more of them, and how many times the ones it has."""
    needs = [
        (max(instants_for(TWO_POINTS, f) for f in r["states"].values()), r["samples"])
        for r in rows
        if any(r.get("margins", {}).values())
    ]
    needed, had = max(needs, key=lambda n: n[0] / n[1])
    if needed <= had:
        return "every share's margin is within ±2 points"
    return (
        f"±2 points on every share needs {needed:,} instants a thread, "
        f"{needed / had:.0f}× these (--freq, if the snapshots keep up, or the run's length)"
    )


def _cell(row: dict[str, Any], state: str) -> str:
    if state not in row["states"]:
        return ""
    margin = row.get("margins", {}).get(state)
    shown = pct(row["states"][state])
    return f"{shown} ±{100.0 * margin:.1f}" if margin else shown


def _total_label(unit: str) -> str:
    return "time" if unit == "ns" else unit


def _amount(weight: float, unit: str) -> str:
    return f"{weight / 1e9:.3f} s" if unit == "ns" else f"{weight:,.0f}"
