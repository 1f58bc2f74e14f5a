"""perfsleuth cache show [RUN]: the cache projections of a `--mode cache` run.
perfsleuth cache calibrate: measure this machine's TLB reach again (scaling uses it)."""

from __future__ import annotations

import argparse

from ..cpu_cache_projections import calibrate
from ..errors import UserError
from ..present import formats_for, write
from ..views import cpu_cache
from .common import add_output_options, add_run_argument, open_store, progress_display

NAME = "cache"
HELP = "show the cache footprint, struct layout, cache model, scaling and constant-time projections"
SHOWN = "cache"  # the documents `cache show` and `cache calibrate` write
MEASURED = "calibration"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="show|calibrate", required=True)
    show = sub.add_parser("show", help="print the projections of a cache run")
    add_run_argument(show)
    # also after `show`; SUPPRESS keeps a --store given before it
    show.add_argument("--store", default=argparse.SUPPRESS, help="the run store folder")
    add_output_options(show, formats_for(SHOWN))
    measure = sub.add_parser(
        "calibrate",
        help="measure this machine's TLB reach and effective LLC (kept per machine for --scale)",
    )
    add_output_options(measure, formats_for(MEASURED))


def run(args: argparse.Namespace) -> int:
    if args.action == "calibrate":
        return run_calibrate(args)
    store = open_store(args)
    run_id = store.resolve(args.run)
    doc = cpu_cache.projections(store, run_id)
    if doc is None:
        raise UserError(cpu_cache.no_projections(run_id))
    write(SHOWN, doc, args.format, args.output)
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    with progress_display(args) as progress:
        result = calibrate.measure(progress=progress)
    path = calibrate.save(result)
    doc = result.to_json() | {"saved_to": str(path)}
    write(MEASURED, doc, args.format, args.output)
    return 0
