"""perfsleuth import: turn a profile file of any supported format into a run."""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..collect import run_facts
from ..errors import UserError
from ..formats import DESCRIPTIONS, check_useful, detect, limits, read_any, read_position
from ..model.run import Recording, StoredDocument
from ..present import write
from ..present.json import RECORDED
from ..store.runs import Store
from .common import add_output_options, amount, count_listing, keep_ui_answers, progress_display

if TYPE_CHECKING:
    from ..formats.callgrind import CallgrindData

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
    # Reading makes containers by the hundred thousand and no cycles that matter: the
    # cyclic collector's 122 passes over them took 0.017 CPU-s of `import` on the bench's
    # perf.data (docs/recording.md#speed). On again after, for a caller in-process.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if args.file != "-":
            return _import(Path(args.file), args, max_bytes, args.file)
        with tempfile.TemporaryDirectory(prefix="perfsleuth-import-") as tmp:
            path = Path(tmp) / "stdin"
            _copy_stdin(path, max_bytes)
            return _import(path, args, max_bytes, "stdin")
    finally:
        if collecting:
            gc.enable()


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
            recording, fmt = _read(path, max_bytes)
        profile = recording.profile
        for warning in profile.meta.pop("warnings", []):
            print(f"perfsleuth: warning: {warning}", file=sys.stderr)
        mode = "count" if recording.documents else "cpu"
        facts = run_facts.new_run(f"import {shown}", mode, source=f"import:{fmt}")
        facts.started = path.stat().st_mtime
        progress.phase(f"storing {amount(profile)}")
        store = Store(args.store)
        info = store.add_run(facts, recording)
        keep_ui_answers(store, info, progress, profile, only_top=True)
        if recording.documents:
            from ..store import kept_counts  # a count run's; a perf.data import needs none

            kept_counts.keep_recorded(store, info, recording, count_listing)
    summary = {**info.summary(), "format": fmt, "samples": profile.num_samples}
    if args.format == "json":
        write(RECORDED, summary, "json", args.output)
    else:
        print(
            f"perfsleuth: imported {shown} ({fmt}, {amount(profile)}) as run {info.id}",
            file=sys.stderr,
        )
    return 0


def _read(path: Path, max_bytes: int) -> tuple[Recording, str]:
    """The file as a recording: a callgrind or cachegrind file as a count run (its exact
    counts kept, so that top, annotate and diff read them as cg_annotate does), any
    other as a sampled one."""
    if detect(path).__name__.rsplit(".", 1)[-1] != "callgrind":
        profile, fmt = read_any(path, max_bytes=max_bytes)
        return Recording(profile), fmt
    return _count_run(path)


def _count_run(path: Path) -> tuple[Recording, str]:
    # imported here: importing a perf.data needs none of a count run's modules
    from ..formats import callgrind
    from ..formats.tool_output.counts import encode_counts, newer_sources
    from ..model.counts import Counts

    parsed = callgrind.apart(path, callgrind.parse(path))
    profile = callgrind.profile_of(parsed)
    check_useful(profile, path.name, "callgrind/cachegrind out")
    # the sources kept are those beside the file (where valgrind ran, as a rule): an
    # imported file may name any file, and what the store keeps its server shows
    folder = path.resolve().parent
    fmt = str(profile.meta.get("format", "callgrind"))
    if fmt == "cachegrind":
        _name_entries(parsed, path)
    newer = newer_sources(callgrind.exact_counts(parsed), folder, folder, path.stat().st_mtime)
    profile.meta.setdefault("warnings", []).extend(
        f"{name} is newer than {path.name}; its lines may not match the counts (annotate "
        "reads it from disk)"
        for name in newer
    )
    counts = encode_counts(path, folder, parsed=parsed, within=folder, leave_out=frozenset(newer))
    document = StoredDocument(Counts.KIND, Counts.NAME, counts)
    meta = {"recorder": fmt, "executable": _program(str(profile.meta.get("cmd", "")))}
    return Recording(profile, meta=meta, documents=[document]), fmt


def _name_entries(parsed: CallgrindData, path: Path) -> None:
    """A cachegrind file says no function's own file (it lists each under every file its
    lines are in): where the program it ran is still beside the file (or on PATH),
    each function's entry comes from the program's debug info, as callgrind's
    instruction addresses give it."""
    from ..symbols.entries import counted_entries

    program = _program(str(parsed.meta.get("cmd", "")))
    found = str(path.resolve().parent / program) if "/" in program else shutil.which(program)
    if not program or found is None or not os.path.isfile(found):
        return
    if os.path.getmtime(found) > os.path.getmtime(path):
        return  # rebuilt since: its lines may not be the ones counted (its libraries: below)
    placed = counted_entries(found, parsed.self_costs, before=os.path.getmtime(path))
    for fn, site in placed.items():
        parsed.own_file[fn] = site[0]
    if placed:
        parsed.meta["entries"] = {fn[1]: list(site) for fn, site in placed.items()}


def _program(cmd: str) -> str:
    """The program valgrind ran, from the file's `cmd:` line (its build-id is not in the
    file: the binary may have been rebuilt since), for `gate` to tell programs apart."""
    words = cmd.split(maxsplit=1)
    return words[0] if words else ""
