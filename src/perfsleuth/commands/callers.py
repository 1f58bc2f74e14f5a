"""perfsleuth callers FUNC: who calls a function, and how much of its cost each brings."""

from __future__ import annotations

import argparse
from functools import partial

from ..present.output import emit
from ..views import callgraph
from .common import add_filter_options, add_output_options, add_run_argument, load_profile

NAME = "callers"
HELP = "callers of a function, with percentages"
DIRECTION = "callers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", help="function name, or a regex")
    add_run_argument(parser)
    add_filter_options(parser)
    add_output_options(parser, ("text", "json"))


def show(args: argparse.Namespace, direction: str) -> int:
    _store, run_id, profile = load_profile(args)
    doc = {"run": str(run_id), "functions": callgraph.callgraph(profile, args.function)}
    emit(doc, args.format, args.output, partial(callgraph.render, direction=direction))
    return 0


def run(args: argparse.Namespace) -> int:
    return show(args, DIRECTION)
