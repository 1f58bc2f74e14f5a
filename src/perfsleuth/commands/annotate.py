"""perfsleuth annotate FUNC: the function's source lines with their cost."""

from __future__ import annotations

import argparse
import sys

from ..collect.run_facts import is_own_command
from ..errors import UserError
from ..model.counts import ExactCounts
from ..model.run import LoadedRun
from ..present import formats_for, write
from ..views import annotate, source
from ..views.callgraph import match_functions, match_names
from .common import (
    add_filter_options,
    add_output_options,
    add_recursion_option,
    add_run_argument,
    apply_filters,
    exact_counts,
    load_run,
    open_store,
    require_exact,
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
    add_recursion_option(parser)
    add_output_options(parser, formats_for("annotate"))


def run(args: argparse.Namespace) -> int:
    if args.all:
        return run_all(args)
    if args.function is None:
        raise UserError("name a function to annotate, or pass --all for every file of a count run")
    loaded = load_run(args)
    exact = exact_counts(args, loaded)
    if exact is not None:
        return annotate_counts(args, loaded, exact)
    info = loaded.info
    profile = apply_filters(loaded.profile, args)
    roots = source_roots(args, info)
    found = source.annotate(profile, args.function, roots, is_own_command(info))
    files = [{"function": fn["function"], **file} for fn in found for file in fn["files"]]
    doc: dict = {"run": str(loaded.id), "files": files}
    if args.asm:
        # capstone and the ELF readers: only --asm needs them
        from ..model.leaf_costs import LeafCosts
        from ..views import disassembly

        functions = match_functions(profile, args.function)
        # per instruction over all the run's samples (a thread or state filter narrows lines)
        costs = open_store(args).documents(loaded.id, LeafCosts.KIND).get(LeafCosts.NAME)
        doc["asm"] = [
            disassembly.hot_line_code(profile, f, info.dsos, costs, info.mode) for f in functions
        ]
    write("annotate", doc, args.format, args.output)
    return 0


def annotate_counts(args: argparse.Namespace, loaded: LoadedRun, exact: ExactCounts) -> int:
    """`annotate FUNC` on a count run: the function's lines with their exact counts."""
    functions = set(match_names({fn for _ob, fn in exact.functions}, args.function))
    doc = listing(args, loaded, exact, 0.0, args.context or annotate.CONTEXT_LINES, functions)
    doc = {"run": str(loaded.id), "functions": sorted(functions), **doc}
    write("annotate", doc, args.format, args.output)
    return 0


def run_all(args: argparse.Namespace) -> int:
    """`annotate --all [RUN]`: the only positional argument is the run."""
    loaded = load_run(args, args.function or args.run)
    exact = require_exact(args, loaded)
    doc = listing(args, loaded, exact, args.threshold / 100.0, args.context, None)
    write("annotate", {"run": str(loaded.id), **doc}, args.format, args.output)
    return 0


def listing(
    args: argparse.Namespace,
    loaded: LoadedRun,
    exact: ExactCounts,
    threshold: float,
    context: int | None,
    functions: set[str] | None,
) -> dict:
    """The annotated listing; a source file read from disk that changed since the run
    is said on stderr (stdout stays diffable)."""
    assert loaded.counts is not None
    recorded = loaded.counts.sources
    doc = annotate.annotate_counts(
        exact,
        source_roots(args, loaded.info),
        threshold=threshold,
        context=context,
        functions=functions,
        recorded=recorded,
        as_named=is_own_command(loaded.info),
    )
    for warning in annotate.changed_sources(
        doc, recorded, loaded.counts.stamps, loaded.info.started
    ):
        print(f"perfsleuth: warning: {warning}", file=sys.stderr)
    return doc
