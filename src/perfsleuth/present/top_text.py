"""TopN as text: the `perfsleuth top` table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .output import cell, pct


def render(doc: dict, console: Console) -> None:
    by = doc["by"]
    table = Table(
        title=f"run {doc['run']} — {_counted(doc)}, {doc['total']:,.0f} {doc['unit']} in total, "
        f"by {by}",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    table.add_column("self", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    name = {"function": "function", "line": "function", "file": "file", "dso": "DSO"}[by]
    table.add_column(name, overflow="fold")
    if by in ("function", "line"):
        table.add_column("DSO", no_wrap=True)
        table.add_column("file:line", overflow="fold")
    for row in doc["rows"]:
        cells = [pct(row["self"]), pct(row["total"])]
        if by in ("function", "line"):
            cells += [row["function"], _short_dso(row["dso"]), _location(row)]
        elif by == "file":
            cells.append(row["file"])
        else:
            cells.append(row["dso"])
        table.add_row(*(cell(c) for c in cells))
    console.print(table)


def _counted(doc: dict) -> str:
    if doc.get("exact"):
        return f"exact counts ({doc['exact']})"
    return f"{doc['samples']:,} samples"


def _location(row: dict) -> str:
    if row.get("file"):
        return f"{row['file']}:{row['line']}" if row.get("line") else row["file"]
    return ""


def _short_dso(dso: str) -> str:
    return dso.rsplit("/", 1)[-1]
