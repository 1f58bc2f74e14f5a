"""perfsleuth diff RUN_A RUN_B: per-function change, normalised to each run's total."""

from __future__ import annotations

import argparse

from ..output import emit
from ..views import diff
from ..views.keys import GROUPINGS
from .common import add_filter_options, add_output_options, load_profile

NAME = "diff"
HELP = "what changed between two runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", help="the baseline run")
    parser.add_argument("run_b", help="the run to compare with it")
    parser.add_argument("--by", choices=GROUPINGS, default="function")
    parser.add_argument("-n", type=int, default=30, help="rows to show (0 = all)")
    add_filter_options(parser)
    add_output_options(parser, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    _s, a_id, a = load_profile(args, args.run_a)
    _s, b_id, b = load_profile(args, args.run_b)
    doc = {"a": str(a_id), "b": str(b_id), **diff.diff(a, b, by=args.by, n=args.n)}
    emit(doc, args.format, args.output, diff.render)
    return 0
