"""perfsleuth advise: ranked findings for a stored run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import UserError
from ..present import FINDINGS, formats_for, write
from ..static_analysis.cpu_limits import DEEP_BUDGET, DEEP_TUS  # not analyzers': --help
from .common import add_output_options, add_run_argument, open_store

if TYPE_CHECKING:
    from ..advisor import AdviseOptions

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
    parser.add_argument(
        "--deep-tus",
        metavar="N",
        help=f"compile and read at most N hot translation units for aliasing writes and "
        f"missed vectorisation (default: {DEEP_TUS}; 0 skips them)",
    )
    parser.add_argument(
        "--budget",
        metavar="SECONDS",
        help=f"CPU seconds within which those units' analyses may start "
        f"(default: {DEEP_BUDGET:g}); the units left out are named",
    )
    add_output_options(parser, formats_for(FINDINGS))


def options_of(args: argparse.Namespace) -> AdviseOptions:
    # the advisor imports every analyzer and verifier (capstone, libclang...): only to advise
    from ..advisor import AdviseOptions

    return AdviseOptions(
        src=args.src or [],
        compile_commands=args.compile_commands,
        rules=args.rules or [],
        show_all=args.show_all,
        verify=args.verify,
        build=args.build,
        deep_tus=deep_tus_of(args.deep_tus),
        deep_budget=budget_of(args.budget),
    )


def deep_tus_of(given: str | None) -> int:
    """--deep-tus N as a number of units; a UserError for anything but 0, 1, 2..."""
    if given is None:
        return DEEP_TUS
    if not given.strip().isdigit():
        raise UserError(f"--deep-tus {given}: give a whole number of translation units, 0 or more")
    return int(given)


def budget_of(given: str | None) -> float:
    """--budget SECONDS as CPU seconds; a UserError for anything but a number of 0
    or more."""
    if given is None:
        return DEEP_BUDGET
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise UserError(f"--budget {given}: give CPU seconds, a number of 0 or more")
    return seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    add_advise_options(parser)


def run(args: argparse.Namespace) -> int:
    from ..advisor import advise

    options = options_of(args)  # a bad option fails before the store is opened
    store = open_store(args)
    run_id = store.resolve(args.run)
    doc = advise(store, run_id, options)
    write(FINDINGS, doc, args.format, args.output)
    return 0
