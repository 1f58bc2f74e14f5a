"""perfsleuth diff RUN_A RUN_B: per-function change, normalised to each run's total,
or exact per-function and per-line deltas when both runs are count runs."""

from __future__ import annotations

import argparse

from ..formats.counts import parse_counts
from ..present import formats_for, write
from ..store.counts import find_counts
from ..views import diff
from ..views.keys import GROUPINGS
from .common import add_filter_options, add_output_options, load_profile, open_store

NAME = "diff"
HELP = "what changed between two runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", help="the baseline run")
    parser.add_argument("run_b", help="the run to compare with it")
    parser.add_argument("--by", choices=GROUPINGS, default="function")
    parser.add_argument(
        "-n", type=int, help="rows to show (0 = all; default 30, all changes for count runs)"
    )
    add_filter_options(parser)
    add_output_options(parser, formats_for("diff"))


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    a_id, b_id = store.resolve(args.run_a), store.resolve(args.run_b)
    counts_a, counts_b = find_counts(store, a_id), find_counts(store, b_id)
    if counts_a is not None and counts_b is not None:
        changed = diff.exact_diff(
            parse_counts(counts_a),
            parse_counts(counts_b),
            sources=(counts_a.sources, counts_b.sources),
            n=args.n or 0,
        )
    else:
        _s, a_id, a = load_profile(args, args.run_a)
        _s, b_id, b = load_profile(args, args.run_b)
        changed = diff.diff(a, b, by=args.by, n=30 if args.n is None else args.n)
    write("diff", {"a": str(a_id), "b": str(b_id), **changed}, args.format, args.output)
    return 0
