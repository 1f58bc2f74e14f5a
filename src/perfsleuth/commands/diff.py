"""perfsleuth diff RUN_A RUN_B: per-function change, normalised to each run's total."""

from __future__ import annotations

import argparse

from ..formats import count_document
from ..present.output import emit
from ..views import count_diff, diff
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
    add_output_options(parser, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    a_id, b_id = store.resolve(args.run_a), store.resolve(args.run_b)
    counts_a, counts_b = count_document.find(store, a_id), count_document.find(store, b_id)
    if counts_a and counts_b:
        data_a, data_b = count_document.parse(counts_a), count_document.parse(counts_b)
        doc = {
            "a": str(a_id),
            "b": str(b_id),
            **count_diff.count_diff(
                data_a,
                data_b,
                sources=(count_document.sources(counts_a), count_document.sources(counts_b)),
                n=args.n or 0,
            ),
        }
        emit(doc, args.format, args.output, count_diff.render)
        return 0
    _s, a_id, a = load_profile(args, args.run_a)
    _s, b_id, b = load_profile(args, args.run_b)
    doc = {
        "a": str(a_id),
        "b": str(b_id),
        **diff.diff(a, b, by=args.by, n=30 if args.n is None else args.n),
    }
    emit(doc, args.format, args.output, diff.render)
    return 0
