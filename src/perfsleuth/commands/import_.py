"""perfsleuth import: turn a profile file of any supported format into a run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..collect import run_facts
from ..errors import UserError
from ..formats import DESCRIPTIONS, read_any
from ..model.run import Recording
from ..present import write
from ..present.json import RECORDED
from ..store.runs import Store
from .common import add_output_options

NAME = "import"
HELP = f"import a profile file as a run: {DESCRIPTIONS}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", help=f"the profile to import, its format found from its content: {DESCRIPTIONS}"
    )
    add_output_options(parser, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path} is a folder; give a profile file")
    if not os.access(path, os.R_OK):
        raise UserError(f"{path}: permission denied")
    profile, fmt = read_any(path)
    facts = run_facts.new_run(f"import {path}", "cpu", source=f"import:{fmt}")
    facts.started = path.stat().st_mtime
    store = Store(args.store)
    info = store.add_run(facts, Recording(profile))
    summary = {**info.summary(), "format": fmt, "samples": profile.num_samples}
    if args.format == "json":
        write(RECORDED, summary, "json", args.output)
    else:
        print(
            f"perfsleuth: imported {path} ({fmt}, {profile.num_samples:,} samples) "
            f"as run {info.id}",
            file=sys.stderr,
        )
    return 0
