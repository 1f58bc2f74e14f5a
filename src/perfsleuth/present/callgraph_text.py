"""Callers or callees as text: per matched function, one table of its neighbours."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .output import cell, pct


def render_callers(doc: dict, console: Console) -> None:
    _render(doc, console, "callers")


def render_callees(doc: dict, console: Console) -> None:
    _render(doc, console, "callees")


def _render(doc: dict, console: Console, direction: str) -> None:
    for entry in doc["functions"]:
        console.print(
            f"[bold]{escape(entry['function'])}[/bold]  self {pct(entry['self']).strip()}  "
            f"total {pct(entry['total']).strip()}  (run {doc['run']})",
            markup=True,
            highlight=False,
        )
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("of run", justify="right", no_wrap=True)
        table.add_column(_of_total(entry["function"]), justify="right", no_wrap=True)
        table.add_column(direction, overflow="fold")
        for row in entry[direction]:
            table.add_row(pct(row["total"]), pct(row["share"]), cell(row["function"]))
        console.print(table)
        console.print()


def _of_total(function: str) -> str:
    """The share column's heading: each neighbour's part of FUNCTION's total (it said
    "of caller's total" above the callers, "of callee's total" above the callees)."""
    return f"of {function}'s total" if len(function) <= 30 else "of its total"
