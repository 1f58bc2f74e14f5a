"""perfsleuth threads: per thread, where its time went by state."""

from __future__ import annotations

import argparse

from ..present import formats_for, write
from ..views.threads import document
from .common import add_filter_options, add_output_options, add_run_argument, load_profile

NAME = "threads"
HELP = "per thread (name, tid): time by state (running, mutex, condvar, io, sleep, other)"
DOCUMENT = "threads"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    add_filter_options(parser)
    add_output_options(parser, formats_for(DOCUMENT))


def run(args: argparse.Namespace) -> int:
    _store, run_id, profile = load_profile(args)
    write(DOCUMENT, document(run_id, profile), args.format, args.output)
    return 0
