"""perfsleuth annotate FUNC: the function's source lines with their cost.

A count run's listing reads the counts kept for it in answers/ (store/kept_counts.py),
found through the run index: that path imports neither DuckDB nor what sampled runs'
listings read, so `annotate` of a small program costs less than cg_annotate's run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..present import formats_for, write
from ..store import kept_counts
from .common import (
    add_filter_options,
    add_output_options,
    add_recursion_option,
    add_run_argument,
    apply_filters,
    count_listing,
    has_filters,
    load_run,
    open_store,
    require_exact,
    source_roots,
    store_folder,
    without_cycle_collection,
)

if TYPE_CHECKING:
    import argparse

    from ..model.count_listing import CountListing
    from ..model.counts import ExactCounts
    from ..model.run import LoadedRun

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
    kept = None if has_filters(args) else kept_counts.load_listing(store_folder(args), args.run)
    if kept is not None:
        return annotate_counts(args, *kept)
    loaded = load_run(args)
    if loaded.counts is not None and not has_filters(args):
        return annotate_counts(args, loaded.id, stored_listing(args, loaded))
    return annotate_samples(args, loaded)


def annotate_samples(args: argparse.Namespace, loaded: LoadedRun) -> int:
    """`annotate FUNC` on a sampled run (or a count run's samples, with a filter)."""
    from ..collect.run_facts import is_own_command
    from ..views import source
    from ..views.callgraph import match_functions

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


def annotate_counts(args: argparse.Namespace, run_id: int, kept: CountListing) -> int:
    """`annotate FUNC` on a count run: the function's lines with their exact counts."""
    from ..views.annotate import CONTEXT_LINES
    from ..views.callgraph import match_names

    exact = kept.counts(split_recursion=args.split_recursion)
    functions = set(match_names({fn for _ob, fn in exact.functions}, args.function))
    if args.split_recursion:
        _name_deeper_levels(exact, functions)
    if args.asm:  # it was left out without a word
        print(
            "perfsleuth: note: --asm lists sampled runs' machine code; a count run's exact "
            f"count of each instruction is in its callgrind file (`perfsleuth export {run_id} "
            "--callgrind FILE`) for KCachegrind's machine code view",
            file=sys.stderr,
        )
    doc = listing(args, kept, exact, 0.0, args.context or CONTEXT_LINES, functions)
    doc = {"run": str(run_id), "functions": sorted(functions), **doc}
    write("annotate", doc, args.format, args.output)
    return 0


def _name_deeper_levels(exact: ExactCounts, functions: set[str]) -> None:
    """With --split-recursion a function's name lists its first level alone: the levels
    below it (callgrind's f'2, f'3), which it does not list, are named on stderr with
    their counts (`annotate parse_value --split-recursion` of cJSON listed 1,417
    instructions, without a word of parse_value'2's 16,695,967)."""
    from ..model.counts import RECURSION_SUFFIX

    counted = exact.function_self()
    levels = sorted(
        name
        for name in counted
        if name not in functions and RECURSION_SUFFIX.sub("", name) in functions
    )
    if levels:
        named = ", ".join(f"{name} ({counted[name]:,} {exact.events[0]})" for name in levels)
        print(
            f"perfsleuth: note: these are the first recursion level's lines; the deeper "
            f'levels are apart: {named}: `annotate "{levels[0]}" --split-recursion` '
            "lists one, `annotate` without --split-recursion all merged",
            file=sys.stderr,
        )


def run_all(args: argparse.Namespace) -> int:
    """`annotate --all [RUN]`: the only positional argument is the run."""
    ref = args.function or args.run
    kept = kept_counts.load_listing(store_folder(args), ref)
    if kept is None:
        loaded = load_run(args, ref)
        require_exact(args, loaded)
        kept = loaded.id, stored_listing(args, loaded)
    run_id, found = kept
    exact = found.counts(split_recursion=args.split_recursion)
    doc = listing(args, found, exact, args.threshold / 100.0, args.context, None)
    write("annotate", {"run": str(run_id), **doc}, args.format, args.output)
    return 0


def stored_listing(args: argparse.Namespace, loaded: LoadedRun) -> CountListing:
    """The listing's counts of a count run read from DuckDB, kept in answers/ for the
    next `annotate` (a run stored before they were kept by `record`)."""
    assert loaded.counts is not None
    made = count_listing(loaded.info, loaded.counts)
    kept_counts.keep_listing(open_store(args), loaded.info, made)
    return made


def listing(
    args: argparse.Namespace,
    kept: CountListing,
    exact: ExactCounts,
    threshold: float,
    context: int | None,
    functions: set[str] | None,
) -> dict:
    """The annotated listing; a source file read from disk that changed since the run
    is said on stderr (stdout stays diffable)."""
    from ..views import annotate

    without_cycle_collection()
    doc = annotate.annotate_counts(
        exact,
        kept.roots([Path(p) for p in args.src or []]),
        threshold=threshold,
        context=context,
        functions=functions,
        recorded=kept.sources,
        as_named=kept.as_named,
    )
    warnings = annotate.changed_sources(doc, kept.sources, kept.stamps, kept.started)
    warnings += annotate.built_before(doc, exact.meta.get("built_before", []))
    for warning in warnings + annotate.lines_past_end(doc):
        print(f"perfsleuth: warning: {warning}", file=sys.stderr)
    _name_unread_folders(doc)
    return doc


def _name_unread_folders(doc: dict) -> None:
    """A file not read though it is where the run names it (an imported run reads only
    the files beside its own file, or under --src): its folder, for `--src` (the
    listing said "source not found" of a file that was there). The CLI's only: the
    user's own disk, which the server does not tell about."""
    for entry in doc["files"]:
        named = Path(entry["file"])
        if not entry["path"] and named.is_absolute() and named.is_file():
            entry["src"] = str(named.parent)
