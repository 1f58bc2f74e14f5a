"""The counts document (model/counts.py) of a callgrind.out file.

At record time `encode_counts` parses the out file once into the columnar model the
views read, keeps the file itself, the source files it counts lines of and their
fingerprints. `with_tables` parses a document stored before the model existed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG

from ...model.counts import Counts, ExactCounts, Sources, Stamps
from ...model.source_lines import source_lines
from .. import callgrind

MAX_SOURCE_BYTES = 4 << 20  # larger source files are read from disk when shown


def encode_counts(
    path: Path,
    cwd: Path | None = None,
    parsed: callgrind.CallgrindData | None = None,
    within: Path | None = None,
    leave_out: frozenset[str] = frozenset(),
) -> Counts:
    """The document of a callgrind.out file (`parsed` already, when the caller read it),
    with its source files as they are now (only those inside `within` when given: an
    imported file's names are not the user's own program's, and the store serves them;
    none of `leave_out`)."""
    raw = path.read_bytes()
    data = parsed if parsed is not None else callgrind.parse_bytes(raw, path.name)
    exact = callgrind.exact_counts(data)
    sources, stamps = source_files(exact, cwd or Path.cwd(), within, leave_out)
    return Counts(raw, sources, exact, stamps)


def source_files(
    exact: ExactCounts,
    cwd: Path,
    within: Path | None = None,
    leave_out: frozenset[str] = frozenset(),
) -> tuple[Sources, Stamps]:
    """file name as callgrind gives it -> its lines, for every readable counted regular
    file (inside `within` after following symlinks, when given) up to MAX_SOURCE_BYTES,
    and the fingerprint of every such file."""
    sources: Sources = {}
    stamps: Stamps = {}
    for name, path, stat in _counted_sources(exact, cwd, within):
        if name in leave_out:
            continue
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        stamps[name] = [stat.st_size, stat.st_mtime, hashlib.sha256(raw).hexdigest()]
        if stat.st_size <= MAX_SOURCE_BYTES:
            sources[name] = source_lines(raw.decode(errors="replace"))
    return sources, stamps


def newer_sources(exact: ExactCounts, cwd: Path, within: Path | None, than: float) -> list[str]:
    """The counted source files (as `source_files` reads them) modified after `than`, an
    imported file's time: kept, their lines would be the edited ones, not those counted
    (cg_annotate warns of a source newer than its data; the import kept brotli's edited
    hash_longest_match64_inc.h and showed the counts on the wrong lines without a word)."""
    return [
        name for name, _path, stat in _counted_sources(exact, cwd, within) if stat.st_mtime > than
    ]


def built_before(exact: ExactCounts, cwd: Path) -> list[tuple[str, str]]:
    """(source file, object) for each counted source file modified after an object whose
    counted code it holds was built: the object was not rebuilt since the edit, so the
    file kept with the run is not the text its lines were counted on (mawk's execute.c
    given a line at its top after the build: every count of it was shown a line off,
    without a word; cg_annotate compares a file's time with its out file's only)."""
    objects: dict[int, set[str]] = {}
    for fid, file in zip(exact.cells.column("fn"), exact.cells.column("file"), strict=True):
        objects.setdefault(file, set()).add(exact.functions[fid][0])
    file_ids = {name: i for i, name in enumerate(exact.files)}
    out = []
    for name, _path, stat in _counted_sources(exact, cwd, None):
        for ob in sorted(objects.get(file_ids[name], ())):
            try:
                built = os.stat(ob).st_mtime
            except OSError:
                continue
            if stat.st_mtime > built:
                out.append((name, ob))
    return out


def _counted_sources(
    exact: ExactCounts, cwd: Path, within: Path | None
) -> Iterator[tuple[str, Path, os.stat_result]]:
    for name in exact.counted_files():
        path = Path(name) if Path(name).is_absolute() else cwd / name
        try:
            if within is not None and not path.resolve().is_relative_to(within.resolve()):
                continue
            stat = path.stat()
        except OSError:
            continue
        if S_ISREG(stat.st_mode):
            yield name, path, stat


def with_tables(counts: Counts) -> Counts:
    """A document stored before the parsed model (version < 3), with it."""
    if counts.exact is not None:
        return counts
    exact = callgrind.exact_counts(callgrind.parse_bytes(counts.callgrind_out, Counts.NAME))
    return Counts(counts.callgrind_out, counts.sources, exact, counts.stamps)
