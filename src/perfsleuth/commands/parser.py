"""Every command's argparse parser (cli.build_parser): imported only when a command line
is not one commands/quick_args.py parses, so that the count views start without argparse
(docs/counts.md)."""

from __future__ import annotations

import argparse
import os
import sys
from argparse import ArgumentParser
from types import ModuleType

from .. import __version__
from . import COMMANDS, after_global_options, load, load_all, named

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import Any


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, its width found without importing shutil: argparse makes a formatter
    at every add_argument, and shutil (with the lzma and bz2 it imports) was 0.006-0.012
    CPU-s of every command, a sixth of a count view on a small program."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser with HelpFormatter; its subcommands' parsers are Parsers too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def terminal_columns() -> int:
    """shutil.get_terminal_size's columns: $COLUMNS, else stdout's terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    if stdout is None:
        return 80
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for every command, or, given argv, the full parser of the one command
    it names alone (imports nothing else; parsing argv never shows the others), or of
    none and the names and help lines of all when argv names none (--help, a typo)."""
    parser = Parser(
        prog="perfsleuth",
        description="A performance detective for native programs: measure, explain, rank.",
    )
    parser.add_argument("--version", action="version", version=f"perfsleuth {__version__}")
    add_global_options(parser, os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth")
    common = Parser(add_help=False)
    # Given after the subcommand it wins; absent there, it leaves the global value alone.
    add_global_options(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if argv is None:
        for module in load_all():
            add_command(sub, module, common)
        return parser
    chosen = named(after_global_options(argv))
    if chosen is not None:
        add_command(sub, load(chosen), common)
        return parser
    for name, (_module, help_line) in COMMANDS.items():
        sub.add_parser(name, help=help_line, description=help_line)
    return parser


def add_command(
    sub: argparse._SubParsersAction, module: ModuleType, common: ArgumentParser
) -> None:
    p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, parents=[common])
    module.add_arguments(p)
    p.set_defaults(handler=module.run)


def add_global_options(parser: argparse.ArgumentParser, store_default: str) -> None:
    """Options accepted before the subcommand as well as after it, like git's."""
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=store_default,
        help="the run store folder (default: $PERFSLEUTH_STORE or .perfsleuth)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if store_default is argparse.SUPPRESS else False,
        help="no progress display (it shows only when stderr is a terminal)",
    )
