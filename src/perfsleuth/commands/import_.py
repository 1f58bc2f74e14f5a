"""perfsleuth import: turn a profile file of any supported format into a run."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ..collect import run_facts
from ..errors import UserError
from ..formats import DESCRIPTIONS, limits, read_any, read_position
from ..model.run import Recording
from ..present import write
from ..present.json import RECORDED
from ..store.runs import Store
from .common import add_output_options, keep_ui_answers, progress_display

NAME = "import"
HELP = f"import a profile file as a run: {DESCRIPTIONS}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        help=f"the profile to import ('-' for stdin), its format found from its content: "
        f"{DESCRIPTIONS}",
    )
    parser.add_argument(
        "--max-size",
        type=float,
        metavar="MB",
        help=f"refuse inputs larger than MB decompressed (default ${limits.MAX_INPUT_ENV}, "
        f"else {limits.DEFAULT_MAX_INPUT_MB})",
    )
    add_output_options(parser, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    max_bytes = limits.max_input_bytes(args.max_size)
    if args.file != "-":
        return _import(Path(args.file), args, max_bytes, args.file)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-import-") as tmp:
        path = Path(tmp) / "stdin"
        _copy_stdin(path, max_bytes)
        return _import(path, args, max_bytes, "stdin")


def _copy_stdin(path: Path, max_bytes: int) -> None:
    """Stdin into `path`, refused past `max_bytes` (readers need a file to sniff and seek)."""
    copied = 0
    with path.open("wb") as out:
        while chunk := sys.stdin.buffer.read(1 << 20):
            copied += len(chunk)
            if copied > max_bytes:
                raise limits.too_big("stdin", max_bytes, "read")
            out.write(chunk)


def _import(path: Path, args: argparse.Namespace, max_bytes: int, shown: str) -> int:
    limits.check_regular(path)
    if not os.access(path, os.R_OK):
        raise UserError(f"{path}: permission denied")
    with progress_display(args) as progress:
        size = path.stat().st_size
        progress.phase(f"reading {shown} ({size / 1e6:,.1f} MB)", total=size)
        with read_position.watched(path, progress):
            profile, fmt = read_any(path, max_bytes=max_bytes)
        for warning in profile.meta.pop("warnings", []):
            print(f"perfsleuth: warning: {warning}", file=sys.stderr)
        facts = run_facts.new_run(f"import {shown}", "cpu", source=f"import:{fmt}")
        facts.started = path.stat().st_mtime
        progress.phase(f"storing {profile.num_samples:,} samples")
        store = Store(args.store)
        info = store.add_run(facts, Recording(profile))
        keep_ui_answers(store, info, progress, profile, only_top=True)
    summary = {**info.summary(), "format": fmt, "samples": profile.num_samples}
    if args.format == "json":
        write(RECORDED, summary, "json", args.output)
    else:
        print(
            f"perfsleuth: imported {shown} ({fmt}, {profile.num_samples:,} samples) "
            f"as run {info.id}",
            file=sys.stderr,
        )
    return 0
