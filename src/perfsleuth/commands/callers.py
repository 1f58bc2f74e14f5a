"""perfsleuth callers FUNC: who calls a function, and how much of its cost each brings."""

from __future__ import annotations

import argparse

from ..present import formats_for, write
from ..views import callgraph
from .common import (
    add_filter_options,
    add_output_options,
    add_run_argument,
    apply_filters,
    exact_counts,
    load_run,
)

NAME = "callers"
HELP = "callers of a function, with percentages"
DOCUMENT = "callers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", help="function name, or a regex")
    add_run_argument(parser)
    add_filter_options(parser)
    add_output_options(parser, formats_for(DOCUMENT))


def show(args: argparse.Namespace, document: str) -> int:
    """The callgraph document of the matched functions, written as `document` (the
    callers or the callees side of it): a count run's from its counted calls."""
    loaded = load_run(args)
    exact = exact_counts(args, loaded)
    if exact is not None:
        functions = callgraph.exact_callgraph(
            exact, args.function, lambda name: callgraph.neighbours(loaded.profile, name)
        )
    else:
        functions = callgraph.callgraph(apply_filters(loaded.profile, args), args.function)
    write(document, {"run": str(loaded.id), "functions": functions}, args.format, args.output)
    return 0


def run(args: argparse.Namespace) -> int:
    return show(args, DOCUMENT)
