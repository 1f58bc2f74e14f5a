"""The fleet commands as text: `fleet top` (the top table over a time range), `fleet status`."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from . import top_text
from .output import cell

TIME = "%Y-%m-%d %H:%M:%S UTC"


def _utc(t: float | None) -> str:
    return time.strftime(TIME, time.gmtime(t)) if t is not None else "-"


def render_top(doc: dict, console: Console) -> None:
    where = f" where {doc['where']}" if doc["where"] else ""
    title = f"fleet {_utc(doc['from'])} .. {_utc(doc['to'])}{where}"
    top_text.render({**doc, "run": title}, console)
    if not doc["rows"]:
        console.print("no samples in this range: widen --from/--to or relax --where")


def render_status(doc: dict, console: Console) -> None:
    console.print(
        f"fleet store {doc['store']}: {doc['bytes']:,} bytes in {doc['files']:,} files, "
        f"data from {_utc(doc['oldest'])} to the hour of {_utc(doc['newest'])}"
    )
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("host", "last push", "windows", "samples", "samples/s", "agent metrics"):
        table.add_column(col, overflow="fold")
    for h in doc["hosts"]:
        metrics = ", ".join(f"{k}={v}" for k, v in sorted(h["metrics"].items()))
        table.add_row(
            cell(h["host"]),
            _utc(h["last_push"]),
            f"{h['windows']:,}",
            f"{h['samples']:,}",
            f"{h['samples_per_s']:.1f}",
            cell(metrics),
        )
    console.print(table)
    if not doc["hosts"]:
        console.print("no host has pushed yet: start `perfsleuth collector` and an agent")
