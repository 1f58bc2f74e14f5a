"""perfsleuth top: the functions (lines, files, DSOs) that cost the most."""

from __future__ import annotations

import json

from ..present import formats_for, write
from ..store import run_index
from ..store.answers import AnswerFiles
from ..views.keys import GROUPINGS, top_name
from .common import (
    add_filter_options,
    add_output_options,
    add_recursion_option,
    add_run_argument,
    apply_filters,
    exact_counts,
    has_filters,
    load_run,
    open_store,
    store_folder,
)

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    import argparse

    from ..model.run import LoadedRun

NAME = "top"
HELP = "top functions, lines, files or DSOs by self or total cost"
DOCUMENT = "top"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    order = parser.add_mutually_exclusive_group()
    order.add_argument("--self", dest="sort", action="store_const", const="self", default="self")
    order.add_argument("--total", dest="sort", action="store_const", const="total")
    parser.add_argument("--by", choices=GROUPINGS, default="function")
    parser.add_argument("-n", type=int, default=20, help="rows to show (0 = all)")
    add_filter_options(parser)
    add_recursion_option(parser)
    add_output_options(parser, formats_for(DOCUMENT))


def run(args: argparse.Namespace) -> int:
    found = kept_file_top(args) if whole_run_top(args) else None
    if found is None:
        found = computed_top(args)
    write(DOCUMENT, found, args.format, args.output)
    return 0


def whole_run_top(args: argparse.Namespace) -> bool:
    """Whether the top asked for is the run's whole TopN by function and self cost, the
    page kept in answers/ (cut to -n rows)."""
    return (
        args.by == "function"
        and args.sort == "self"
        and not has_filters(args)
        and not args.split_recursion
    )


def kept_file_top(args: argparse.Namespace) -> dict | None:
    """The run's TopN read from its file in answers/, found through the run index without
    opening DuckDB (store/run_index.py); None when either is missing."""
    root = store_folder(args)
    indexed = run_index.find(root, args.run)
    if indexed is None:
        return None
    kept = AnswerFiles(root).kept_json(*indexed.key, top_name("function"))
    return None if kept is None else _shown(kept, args.n)


def computed_top(args: argparse.Namespace) -> dict:
    """The top computed from the run; its modules are imported only here (the kept page's
    path starts without them)."""
    from ..model.counts import EVENT_UNITS
    from ..views import top

    loaded = load_run(args)
    exact = exact_counts(args, loaded)
    # the page of a count run is built from its exact counts when its unit says so
    page_is_this_top = exact is None or loaded.info.unit == EVENT_UNITS["Ir"]
    if whole_run_top(args) and page_is_this_top:
        found = kept_top(args, loaded)
    elif exact is not None:
        found = top.exact_top(exact, by=args.by, sort=args.sort, n=args.n)
    else:
        found = top.top(apply_filters(loaded.profile, args), by=args.by, sort=args.sort, n=args.n)
    return {"run": str(loaded.id), **found}


def kept_top(args: argparse.Namespace, loaded: LoadedRun) -> dict:
    """The functions by self cost: the web UI's TopN of the run (every function, in this
    order), kept in answers/ when the run was stored, or computed and kept now. Reading
    it spares loading the run's samples: a 1.6M-sample run's top in a fraction of the time.
    """
    from ..views import run_answers

    store = open_store(args)
    name = top_name("function")
    doc = AnswerFiles(store.root).kept_json(loaded.info.id, loaded.info.started, name)
    if doc is None:  # not kept, or a damaged file (removed by kept_json): built and kept now
        source = run_answers.stored_run(store, loaded.info, lambda: loaded.profile)
        doc = json.loads(run_answers.kept_page(store, source, name))
    doc.pop("run", None)
    return _shown(doc, args.n)


def _shown(doc: dict, n: int) -> dict:
    doc["rows"] = doc["rows"][: n if n > 0 else None]
    return doc
