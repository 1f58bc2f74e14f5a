"""perfsleuth symbols upload FILE...: symbols for the frames hosts could not name.

The fleet store keeps the function symbols of each file for its build-id
(store/fleet/symbols.py); fleet queries then name the "[unknown]" frames of that
build-id, already stored or still to come.
"""

from __future__ import annotations

import argparse

from .fleet import add_store_arguments

NAME = "symbols"
HELP = "upload symbols (an unstripped binary or a .debug file) to name unknown fleet frames"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    upload = verbs.add_parser(
        "upload",
        help="keep the function symbols of each FILE for its build-id",
        description="keep the function symbols of each FILE (an unstripped binary, a "
        "library or a .debug file with a GNU build-id) in the fleet store, so that fleet "
        "queries name the frames of that build-id the hosts could not",
    )
    add_store_arguments(upload)
    upload.add_argument("files", nargs="+", metavar="FILE")


def run(args: argparse.Namespace) -> int:
    from ..store.fleet import FleetStore, fleet_root  # Arrow, DWARF: only to upload

    store = FleetStore(fleet_root(args.store), args.endpoint)
    for path in args.files:
        build_id, functions, lines = store.upload_symbols(path)
        dwarf = ", with its DWARF for file:line" if lines else " (no DWARF: no file:line)"
        print(f"{path}: build-id {build_id}, {functions:,} functions kept in {store.root}{dwarf}")
    return 0
