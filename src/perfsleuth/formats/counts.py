"""The counts document (model/counts.py) of a callgrind.out file, and back.

At record time `encode_counts` reads the out file and the source files it counts lines
of; views, analyzers and the gate `parse_counts` a stored document with formats.callgrind.
"""

from __future__ import annotations

from pathlib import Path

from ..model.counts import Counts, Sources
from . import callgrind

MAX_SOURCE_BYTES = 4 << 20  # larger source files are read from disk when shown


def encode_counts(path: Path, cwd: Path | None = None) -> Counts:
    """The document of a callgrind.out file, with its source files as they are now."""
    raw = path.read_bytes()
    data = callgrind.parse_bytes(raw, path.name)
    return Counts(raw, source_files(data, cwd or Path.cwd()))


def source_files(data: callgrind.CallgrindData, cwd: Path) -> Sources:
    """file name as callgrind gives it -> its lines, for every readable counted file."""
    names = {file for sites in data.self_costs.values() for file, line in sites if line > 0}
    out = {}
    for name in sorted(names):
        path = Path(name) if Path(name).is_absolute() else cwd / name
        try:
            if path.stat().st_size <= MAX_SOURCE_BYTES:
                out[name] = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
    return out


def parse_counts(counts: Counts) -> callgrind.CallgrindData:
    return callgrind.parse_bytes(counts.callgrind_out, Counts.NAME)
