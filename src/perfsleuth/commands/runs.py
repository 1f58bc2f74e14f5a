"""perfsleuth runs: list the stored runs, newest first."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from ..present.output import emit
from .common import add_output_options, open_store

NAME = "runs"
HELP = "list stored runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_output_options(parser, ("text", "json"))


def render(doc: list[dict], console: Console) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("id", "started", "mode", "duration", "exit", "command"):
        table.add_column(col, no_wrap=col != "command", overflow="fold")
    for r in doc:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["_started"]))
        duration = f"{r['duration_s']:.2f}s" if r["duration_s"] is not None else ""
        exit_status = "" if r["exit_status"] is None else str(r["exit_status"])
        table.add_row(r["id"], started, r["mode"], duration, exit_status, r["command"])
    console.print(table)


def run(args: argparse.Namespace) -> int:
    runs = open_store(args).runs() if open_store(args).db.exists() else []
    if args.format == "json":
        emit([r.summary() for r in runs], "json", args.output, render)
    else:
        emit([{**r.summary(), "_started": r.started} for r in runs], "text", args.output, render)
    return 0
