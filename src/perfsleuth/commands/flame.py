"""perfsleuth flame: folded stacks or a self-contained interactive flame graph."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..present import PROFILE, write
from .common import add_filter_options, add_run_argument, load_profile, titled_profile

NAME = "flame"
HELP = "flame graph: --folded text or --html FILE"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--folded", action="store_true", help="folded stacks (default)")
    kind.add_argument("--html", metavar="FILE", help="write an interactive HTML flame graph")
    parser.add_argument("-o", "--output", metavar="FILE", help="write folded stacks to FILE")
    add_filter_options(parser)


def run(args: argparse.Namespace) -> int:
    store, run_id, profile = load_profile(args)
    if not profile.sample_stack:
        raise UserError(f"run {run_id} has no samples to draw")
    doc = titled_profile(store, run_id, profile)
    if args.html:
        write(PROFILE, doc, "html", args.html)
        print(f"perfsleuth: wrote {args.html}", file=sys.stderr)
    else:
        write(PROFILE, doc, "folded", args.output)
    return 0
