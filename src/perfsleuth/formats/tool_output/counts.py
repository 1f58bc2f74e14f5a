"""The counts document (model/counts.py) of a callgrind.out file.

At record time `encode_counts` parses the out file once into the columnar model the
views read, keeps the file itself, the source files it counts lines of and their
fingerprints. `with_tables` parses a document stored before the model existed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...model.counts import Counts, ExactCounts, Sources, Stamps
from .. import callgrind

MAX_SOURCE_BYTES = 4 << 20  # larger source files are read from disk when shown


def encode_counts(
    path: Path, cwd: Path | None = None, parsed: callgrind.CallgrindData | None = None
) -> Counts:
    """The document of a callgrind.out file (`parsed` already, when the caller read it),
    with its source files as they are now."""
    raw = path.read_bytes()
    data = parsed if parsed is not None else callgrind.parse_bytes(raw, path.name)
    exact = callgrind.exact_counts(data)
    sources, stamps = source_files(exact, cwd or Path.cwd())
    return Counts(raw, sources, exact, stamps)


def source_files(exact: ExactCounts, cwd: Path) -> tuple[Sources, Stamps]:
    """file name as callgrind gives it -> its lines, for every readable counted file
    up to MAX_SOURCE_BYTES, and the fingerprint of every readable counted file."""
    sources: Sources = {}
    stamps: Stamps = {}
    for name in exact.counted_files():
        path = Path(name) if Path(name).is_absolute() else cwd / name
        try:
            stat = path.stat()
            raw = path.read_bytes()
        except OSError:
            continue
        stamps[name] = [stat.st_size, stat.st_mtime, hashlib.sha256(raw).hexdigest()]
        if stat.st_size <= MAX_SOURCE_BYTES:
            sources[name] = raw.decode(errors="replace").splitlines()
    return sources, stamps


def with_tables(counts: Counts) -> Counts:
    """A document stored before the parsed model (version < 3), with it."""
    if counts.exact is not None:
        return counts
    exact = callgrind.exact_counts(callgrind.parse_bytes(counts.callgrind_out, Counts.NAME))
    return Counts(counts.callgrind_out, counts.sources, exact, counts.stamps)
