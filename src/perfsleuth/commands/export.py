"""perfsleuth export RUN: write a stored run in another tool's format, one option each."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..present import PROFILE, outputs_for, write
from .common import add_run_argument, load_profile, load_run, titled_profile

NAME = "export"
HELP = "export a run for other tools: one option per profile output (pprof, speedscope...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    kind = parser.add_mutually_exclusive_group(required=True)
    for output in outputs_for(PROFILE):
        kind.add_argument(
            f"--{output.name}", dest=_dest(output.name), metavar="FILE", help=output.help
        )
    kind.add_argument(
        "--callgrind",
        metavar="FILE",
        help="a count run's callgrind out file as valgrind wrote it, for callgrind_annotate "
        "or KCachegrind ('-' for stdout)",
    )


def _dest(fmt: str) -> str:
    return f"export_{fmt}"


def run(args: argparse.Namespace) -> int:
    if args.callgrind:
        return _callgrind(args)
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


def _callgrind(args: argparse.Namespace) -> int:
    """The callgrind out file a count run keeps byte for byte."""
    loaded = load_run(args)
    if loaded.counts is None:
        raise UserError(
            f"run {loaded.info.id} is a {loaded.info.mode} run: only count runs "
            "(record --mode count) keep callgrind's file"
        )
    if args.callgrind == "-":
        sys.stdout.buffer.write(loaded.counts.callgrind_out)
        return 0
    try:
        with open(args.callgrind, "wb") as out:
            out.write(loaded.counts.callgrind_out)
    except OSError as e:
        raise UserError(f"cannot write {args.callgrind}: {e.strerror}") from e
    print(
        f"perfsleuth: wrote run {loaded.info.id}'s callgrind file to {args.callgrind}",
        file=sys.stderr,
    )
    return 0
