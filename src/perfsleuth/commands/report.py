"""perfsleuth report: the web UI as one self-contained HTML file (no server, no network)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..present import UI, formats_for, write
from ..present.html import UiBundle
from .common import add_output_options, add_run_argument, open_store

NAME = "report"
HELP = "the web UI for one run as a single self-contained HTML file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    add_output_options(parser, formats_for(UI))
    parser.add_argument("--compare", metavar="RUN", help="also embed a comparison with RUN")
    parser.add_argument(
        "--src", action="append", metavar="DIR", help="source root for the source view"
    )


def run(args: argparse.Namespace) -> int:
    from ..server import bundle  # the web UI's stack loads to write the page, not to start
    from ..server.api import Api
    from ..server.httpd import static_root

    store = open_store(args)
    run_id = store.resolve(args.run)
    compare = store.resolve(args.compare) if args.compare else None
    api = Api(store, [Path(p) for p in args.src or []])
    collected = bundle.collect(api, run_id, compare)
    page = UiBundle(collected, static_root())
    write(UI, page, args.format, args.output)
    missing = bundle.missing_sources(collected)
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        shown = ", ".join(missing[:5]) + more
        print(
            f"perfsleuth: the report has no source for {shown}: "
            "pass --src DIR (the folder they are under) to embed them",
            file=sys.stderr,
        )
    if args.output and args.output != "-":
        print(f"perfsleuth: wrote the report of run {run_id} to {args.output}", file=sys.stderr)
    return 0
