"""perfsleuth run: record a command, then print its ranked findings and top functions."""

from __future__ import annotations

import argparse
import os

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..advisor import advise, check_options
from ..present import text, write
from ..present.output import console_for, destination, pct
from ..symbols.names import elide_templates
from ..views import top
from .advise import add_advise_options, options_of
from .record import add_record_options, record_run

NAME = "run"
HELP = "record a command and print ranked findings (the main job)"
TOP_ROWS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_options(parser)
    add_advise_options(parser)


def run(args: argparse.Namespace) -> int:
    options = options_of(args)
    check_options(options)  # bad --src or --rules fail before the target runs
    store, info, profile = record_run(args)
    doc = advise(store, info.id, options, profile=profile, info=info)
    if args.format != "text":
        write(doc, args.format, args.output)
        return info.exit_status or 0
    with destination(args.output) as fh:
        console = console_for(fh)
        text.render(doc, console)
        console.print()
        _render_top(top.top(profile, n=TOP_ROWS), console)
    return info.exit_status or 0


def _render_top(doc: dict, console: Console) -> None:
    """A short TopN; `perfsleuth top` shows the full one."""
    table = Table(
        title=f"top functions ({doc['samples']:,} samples; `perfsleuth top` shows more)",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    for name in ("self", "total"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("function", no_wrap=True, max_width=56)
    table.add_column("where", no_wrap=True, max_width=30)
    for row in doc["rows"]:
        where = os.path.basename(row["file"]) or row["dso"]
        if row["file"] and row["line"]:
            where += f":{row['line']}"
        cells = (pct(row["self"]), pct(row["total"]), elide_templates(row["function"]), where)
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)
