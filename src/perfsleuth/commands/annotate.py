"""perfsleuth annotate FUNC: the function's source lines with their cost."""

from __future__ import annotations

import argparse

from ..output import emit
from ..views import annotate
from .common import (
    add_filter_options,
    add_output_options,
    add_run_argument,
    load_profile,
    source_roots,
)

NAME = "annotate"
HELP = "source lines of a function with their cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", help="function name, or a regex")
    add_run_argument(parser)
    parser.add_argument(
        "--src", action="append", metavar="DIR", help="where to look for source files"
    )
    add_filter_options(parser)
    add_output_options(parser, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    store, run_id, profile = load_profile(args)
    roots = source_roots(args, store.run_info(run_id).cwd)
    doc = {"run": str(run_id), "files": annotate.annotate(profile, args.function, roots)}
    emit(doc, args.format, args.output, annotate.render)
    return 0
