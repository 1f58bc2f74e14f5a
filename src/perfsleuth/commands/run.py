"""perfsleuth run: record a command, then print its ranked findings and top functions."""

from __future__ import annotations

import argparse

from ..present import FINDINGS, write
from ..views import top
from .advise import add_advise_options, options_of
from .record import add_record_options, record_run

NAME = "run"
HELP = "record a command and print ranked findings (the main job)"
TOP_ROWS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_options(parser)
    add_advise_options(parser)


def run(args: argparse.Namespace) -> int:
    from ..advisor import advise, check_options  # every analyzer: only once parsing is done

    options = options_of(args)
    check_options(options)  # bad --src or --rules fail before the target runs
    store, info, profile = record_run(args)
    doc = advise(store, info.id, options, profile=profile, info=info)
    if args.format == "text":
        write("run", {**doc, "top": top.top(profile, n=TOP_ROWS)}, "text", args.output)
    else:
        write(FINDINGS, doc, args.format, args.output)
    return info.exit_status or 0
