"""perfsleuth diff RUN_A RUN_B: per-function change, normalised to each run's total,
or exact per-function and per-line deltas when both runs are count runs."""

from __future__ import annotations

import sys

from ..present import formats_for, write
from ..store import kept_counts
from ..views.keys import GROUPINGS
from .common import (
    add_filter_options,
    add_output_options,
    add_recursion_option,
    apply_filters,
    has_filters,
    load_runs,
    open_store,
    store_folder,
    tools_differ,
    without_cycle_collection,
)

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    import argparse

    from ..model.line_counts import LineCounts

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
    if not has_filters(args):
        kept = kept_counts.load(store_folder(args), args.run_a, args.run_b)
        if kept is not None:
            (id_a, lines_a), (id_b, lines_b) = kept
            return _write_exact(args, id_a, id_b, lines_a, lines_b)
    a, b = load_runs(args, args.run_a, args.run_b)
    if not has_filters(args) and a.counts and b.counts:
        store = open_store(args)
        lines_a = kept_counts.keep(store, a.info, a.counts)
        lines_b = kept_counts.keep(store, b.info, b.counts)
        return _write_exact(args, a.id, b.id, lines_a, lines_b)
    from ..views import diff  # sampled runs only: it imports the profile's aggregations

    profiles = apply_filters(a.profile, args), apply_filters(b.profile, args)
    changed = diff.diff(*profiles, by=args.by, n=30 if args.n is None else args.n)
    write("diff", {"a": str(a.id), "b": str(b.id), **changed}, args.format, args.output)
    return 0


def _write_exact(
    args: argparse.Namespace, id_a: int, id_b: int, lines_a: LineCounts, lines_b: LineCounts
) -> int:
    from ..views.count_diff import exact_diff

    without_cycle_collection()
    split = getattr(args, "split_recursion", False)
    changed = exact_diff(lines_a, lines_b, n=args.n or 0, split_recursion=split)
    if lines_a.tool and lines_b.tool and lines_a.tool != lines_b.tool:
        note = tools_differ(id_a, lines_a.tool, id_b, lines_b.tool)
        print(f"perfsleuth: note: {note}", file=sys.stderr)
    write("diff", {"a": str(id_a), "b": str(id_b), **changed}, args.format, args.output)
    return 0
