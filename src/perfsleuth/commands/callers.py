"""perfsleuth callers FUNC: who calls a function, and how much of its cost each brings."""

from __future__ import annotations

import argparse

from ..present import formats_for, write
from ..views import callgraph
from .common import add_filter_options, add_output_options, add_run_argument, load_profile

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
    callers or the callees side of it)."""
    _store, run_id, profile = load_profile(args)
    doc = {"run": str(run_id), "functions": callgraph.callgraph(profile, args.function)}
    write(document, doc, args.format, args.output)
    return 0


def run(args: argparse.Namespace) -> int:
    return show(args, DOCUMENT)
