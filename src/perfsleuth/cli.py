"""Command-line entry point: argument parsing and wiring only."""

from __future__ import annotations

import argparse
import os
import sys

import duckdb

from . import __version__
from .commands import load_all, load_for
from .errors import UserError


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for every command, or only for the one argv names (faster start)."""
    parser = argparse.ArgumentParser(
        prog="perfsleuth",
        description="A performance detective for native programs: measure, explain, rank.",
    )
    parser.add_argument("--version", action="version", version=f"perfsleuth {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="PATH",
        default=os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth",
        help="the run store folder (default: $PERFSLEUTH_STORE or .perfsleuth)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in load_all() if argv is None else load_for(argv):
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, parents=[common])
        module.add_arguments(p)
        p.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as e:
        print(f"perfsleuth: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("perfsleuth: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `perfsleuth top | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except duckdb.Error as e:
        print(f"perfsleuth: the run store failed: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
