"""perfsleuth export RUN: write a stored run as pprof, folded stacks or speedscope JSON."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..present.output import destination
from ..views import flame
from .common import add_run_argument, load_profile

NAME = "export"
HELP = "export a run as pprof (profile.proto), folded stacks or speedscope JSON"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--pprof", metavar="FILE", help="gzipped profile.proto for `go tool pprof`")
    kind.add_argument("--folded", metavar="FILE", help="folded stacks ('-' for stdout)")
    kind.add_argument("--speedscope", metavar="FILE", help="speedscope JSON")


def run(args: argparse.Namespace) -> int:
    _store, run_id, profile = load_profile(args)
    if not profile.sample_stack:
        raise UserError(f"run {run_id} has no samples; nothing to export")
    if args.pprof:
        from ..formats import pprof

        pprof.write(profile, args.pprof)
        target = args.pprof
    elif args.speedscope:
        from ..formats import speedscope

        speedscope.write(profile, args.speedscope)
        target = args.speedscope
    else:
        with destination(args.folded) as fh:
            flame.write_folded(profile, fh)
        target = args.folded
    if target != "-":
        print(f"perfsleuth: wrote run {run_id} to {target}", file=sys.stderr)
    return 0
