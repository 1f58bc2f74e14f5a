"""The stored runs as text: one row per run, newest first, started in local time."""

from __future__ import annotations

import calendar
import time

from rich.console import Console
from rich.table import Table

from .output import cell

ISO_UTC = "%Y-%m-%dT%H:%M:%SZ"  # RunInfo.summary()'s "started"


def render(doc: list[dict], console: Console) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("id", "started", "mode", "duration", "exit", "command"):
        table.add_column(col, no_wrap=col != "command", overflow="fold")
    for r in doc:
        duration = f"{r['duration_s']:.2f}s" if r["duration_s"] is not None else ""
        exit_status = "" if r["exit_status"] is None else str(r["exit_status"])
        # cell: a command's brackets (an XPath predicate, a glob) are not rich markup
        table.add_row(
            r["id"], _local(r["started"]), r["mode"], duration, exit_status, cell(r["command"])
        )
    console.print(table)


def _local(started: str) -> str:
    epoch = calendar.timegm(time.strptime(started, ISO_UTC))
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
