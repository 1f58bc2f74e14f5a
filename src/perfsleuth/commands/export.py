"""perfsleuth export RUN: write a stored run in another tool's format, one option each."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..present import PROFILE, outputs_for, write
from .common import add_run_argument, load_profile, titled_profile

NAME = "export"
HELP = "export a run for other tools: one option per profile output (pprof, speedscope...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    kind = parser.add_mutually_exclusive_group(required=True)
    for output in outputs_for(PROFILE):
        kind.add_argument(
            f"--{output.name}", dest=_dest(output.name), metavar="FILE", help=output.help
        )


def _dest(fmt: str) -> str:
    return f"export_{fmt}"


def run(args: argparse.Namespace) -> int:
    store, run_id, profile = load_profile(args)
    if not profile.sample_stack:
        raise UserError(f"run {run_id} has no samples; nothing to export")
    fmt, target = next(
        (o.name, path) for o in outputs_for(PROFILE) if (path := getattr(args, _dest(o.name)))
    )
    write(PROFILE, titled_profile(store, run_id, profile), fmt, target)
    if target != "-":
        print(f"perfsleuth: wrote run {run_id} to {target}", file=sys.stderr)
    return 0
