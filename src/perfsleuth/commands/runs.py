"""perfsleuth runs: list the stored runs, newest first."""

from __future__ import annotations

import argparse

from ..present import formats_for, write
from .common import add_output_options, open_store

NAME = "runs"
HELP = "list stored runs"
DOCUMENT = "runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_output_options(parser, formats_for(DOCUMENT))


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    runs = store.runs() if store.db.exists() else []
    write(DOCUMENT, [r.summary() for r in runs], args.format, args.output)
    return 0
