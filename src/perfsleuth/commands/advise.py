"""perfsleuth advise: ranked findings for a stored run."""

from __future__ import annotations

import argparse

from ..advisor import AdviseOptions, advise
from ..present import FORMATS, write
from .common import add_output_options, add_run_argument, open_store

NAME = "advise"
HELP = "ranked findings (what to fix first) for a stored run"


def add_advise_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--src",
        action="append",
        metavar="DIR",
        help="source root (repeatable; default: DW_AT_comp_dir of the binaries)",
    )
    parser.add_argument(
        "--compile-commands", metavar="FILE", help="compile_commands.json (default: found)"
    )
    parser.add_argument(
        "--rules",
        action="append",
        metavar="FILE",
        help="extra library rules (TOML; repeatable; <store>/rules.toml is read too)",
    )
    parser.add_argument(
        "--all",
        dest="show_all",
        action="store_true",
        help="also show findings below the noise floor",
    )
    parser.add_argument(
        "--verify", action="store_true", help="measure the top findings' fixes with A/B runs"
    )
    parser.add_argument(
        "--build",
        metavar="CMD",
        help="with --verify: shell command that rebuilds the program into $OUT (build flags)",
    )
    add_output_options(parser, FORMATS)


def options_of(args: argparse.Namespace) -> AdviseOptions:
    return AdviseOptions(
        src=args.src or [],
        compile_commands=args.compile_commands,
        rules=args.rules or [],
        show_all=args.show_all,
        verify=args.verify,
        build=args.build,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    add_advise_options(parser)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    run_id = store.resolve(args.run)
    doc = advise(store, run_id, options_of(args))
    write(doc, args.format, args.output)
    return 0
