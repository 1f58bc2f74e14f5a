"""perfsleuth diff RUN_A RUN_B: per-function change, normalised to each run's total,
or exact per-function and per-line deltas when both runs are count runs."""

from __future__ import annotations

import argparse

from ..model.run import LoadedRun
from ..present import formats_for, write
from ..store import kept_counts
from ..views import diff
from ..views.keys import GROUPINGS
from .common import (
    add_filter_options,
    add_output_options,
    add_recursion_option,
    apply_filters,
    exact_counts,
    has_filters,
    load_runs,
    open_store,
)

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
    add_recursion_option(parser)
    add_output_options(parser, formats_for("diff"))


def run(args: argparse.Namespace) -> int:
    a, b = loaded_runs(args, args.run_a, args.run_b)
    exact_a, exact_b = exact_counts(args, a), exact_counts(args, b)
    if exact_a is not None and exact_b is not None and a.counts and b.counts:
        sources = (a.counts.sources, b.counts.sources)
        changed = diff.exact_diff(exact_a, exact_b, sources=sources, n=args.n or 0)
    else:
        profiles = apply_filters(a.profile, args), apply_filters(b.profile, args)
        changed = diff.diff(*profiles, by=args.by, n=30 if args.n is None else args.n)
    write("diff", {"a": str(a.id), "b": str(b.id), **changed}, args.format, args.output)
    return 0


def loaded_runs(args: argparse.Namespace, *refs: str) -> list[LoadedRun]:
    """The runs, from their counts kept in answers/ when both are count runs whose
    counts were kept (DuckDB is not even imported), else from the store, keeping them."""
    store = open_store(args)
    kept = None if has_filters(args) else kept_counts.load(store, *refs)
    if kept is not None:
        return kept
    loaded = load_runs(args, *refs)
    for run in loaded:
        kept_counts.keep(store, run.info, run.counts)
    return loaded
