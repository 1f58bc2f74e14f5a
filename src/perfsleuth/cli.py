"""Command-line entry point: argument parsing and wiring only."""

from __future__ import annotations

import sys

from .commands import after_global_options as after_global_options  # the tests'
from .commands import quick_args
from .errors import UserError

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    import argparse


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """commands/parser.py's build_parser: every command's parser, or given argv the one
    it names (argparse is imported only here)."""
    from .commands.parser import build_parser as build

    return build(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = quick_args.parse(argv)  # the count views' plain lines, without argparse
    args = build_parser(argv).parse_args(argv) if quick is None else quick
    try:
        return int(args.handler(args) or 0)
    except UserError as e:
        print(f"perfsleuth: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt as e:
        # Ctrl-C, or SIGTERM/SIGHUP during a recording (collect.target.Terminated)
        print(f"perfsleuth: {str(e) or 'interrupted'}", file=sys.stderr)
        return getattr(e, "exit_status", 130)
    except BrokenPipeError:
        # `perfsleuth top | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except Exception as e:
        # DuckDB's engine only when a command loaded it: the always-on agent saves its 27 MB
        duckdb = sys.modules.get("_duckdb")
        if duckdb is None or not isinstance(e, duckdb.Error):
            raise
        print(f"perfsleuth: the run store failed: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
