"""perfsleuth annotate FUNC: the function's source lines with their cost."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..collect.run_facts import is_own_command
from ..errors import UserError
from ..formats.counts import parse_counts
from ..model.counts import Counts
from ..model.profile import Profile
from ..present import formats_for, write
from ..store.counts import find_counts, require_counts
from ..views import annotate, disassembly
from ..views.callgraph import match_functions
from .common import (
    add_filter_options,
    add_output_options,
    add_run_argument,
    load_profile,
    open_store,
    source_roots,
)

NAME = "annotate"
HELP = "source lines of a function with their cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", nargs="?", help="function name, or a regex")
    add_run_argument(parser)
    parser.add_argument(
        "--all",
        action="store_true",
        help="count runs: every source file above --threshold, diffable (annotate --all [RUN])",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.1,
        metavar="PCT",
        help="with --all: only files with at least PCT%% of the run's count (default 0.1)",
    )
    parser.add_argument(
        "--context",
        type=int,
        metavar="N",
        help="with --all: N lines around counted lines instead of whole files",
    )
    parser.add_argument(
        "--src", action="append", metavar="DIR", help="where to look for source files"
    )
    parser.add_argument(
        "--asm",
        action="store_true",
        help="sampled runs: the machine code of each function's hot lines, from the run's binary",
    )
    add_filter_options(parser)
    add_output_options(parser, formats_for("annotate"))


def run(args: argparse.Namespace) -> int:
    if args.all:
        return run_all(args)
    if args.function is None:
        raise UserError("name a function to annotate, or pass --all for every file of a count run")
    store, run_id, profile = load_profile(args)
    info = store.run_info(run_id)
    roots = source_roots(args, info)
    counts = find_counts(store, run_id)
    if counts is not None:
        return annotate_counts(args, run_id, counts, profile, roots, is_own_command(info))
    files = annotate.annotate(profile, args.function, roots, is_own_command(info))
    doc: dict = {"run": str(run_id), "files": files}
    if args.asm:
        functions = match_functions(profile, args.function)
        doc["asm"] = [disassembly.hot_line_code(profile, f, info.dsos) for f in functions]
    write("annotate", doc, args.format, args.output)
    return 0


def annotate_counts(
    args: argparse.Namespace,
    run_id: int,
    counts: Counts,
    profile: Profile,
    roots: list[Path],
    as_named: bool,
) -> int:
    """`annotate FUNC` on a count run: the function's lines with their exact counts."""
    functions = set(match_functions(profile, args.function))
    doc = annotate.annotate_counts(
        parse_counts(counts),
        roots,
        threshold=0.0,
        context=args.context or annotate.CONTEXT_LINES,
        functions=functions,
        recorded=counts.sources,
        as_named=as_named,
    )
    doc = {"run": str(run_id), "functions": sorted(functions), **doc}
    write("annotate", doc, args.format, args.output)
    return 0


def run_all(args: argparse.Namespace) -> int:
    """`annotate --all [RUN]`: the only positional argument is the run."""
    store = open_store(args)
    run_id = store.resolve(args.function or args.run)
    counts = require_counts(store, run_id)
    info = store.run_info(run_id)
    doc = annotate.annotate_counts(
        parse_counts(counts),
        source_roots(args, info),
        threshold=args.threshold / 100.0,
        context=args.context,
        recorded=counts.sources,
        as_named=is_own_command(info),
    )
    write("annotate", {"run": str(run_id), **doc}, args.format, args.output)
    return 0
