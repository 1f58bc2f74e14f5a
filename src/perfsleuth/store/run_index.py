"""The store's run index: each run's id, start time and unit, in a small JSON file beside
runs.duckdb, so that a command answered by files kept for a run (its TopN in answers/,
a count run's counts) resolves `latest~N` without importing DuckDB, which alone costs
more CPU than the rest of `perfsleuth top` (0.15-0.2 CPU-s).

Every write to the store rewrites it, after DuckDB has closed the file, with the size
and modification time runs.duckdb has then. It is believed only while the file still
has them and no write-ahead log lies beside it: a write by anything else (an older
perfsleuth, a DuckDB client, a write cut short) sends readers back to DuckDB.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

INDEX_NAME = "runs-index.json"


@dataclass(frozen=True)
class IndexedRun:
    """What the index knows of a run: enough to name the files kept for it."""

    id: int
    started: float
    unit: str

    @property
    def key(self) -> tuple[int, float]:
        """(id, start time): what names the files kept for the run in answers/."""
        return self.id, self.started


def _stamp(db: Path) -> list[int] | None:
    """runs.duckdb's size and mtime, or None while a write-ahead log is beside it."""
    if db.with_name(db.name + ".wal").exists():
        return None
    try:
        st = db.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def write(db: Path, runs: list[IndexedRun]) -> None:
    """Keep the index of `db`'s runs (newest first); call it once DuckDB closed the file.
    Not kept (a read-only folder, a full disk), the old index no longer matches the file,
    and readers ask DuckDB."""
    stamp = _stamp(db)
    if stamp is None:
        return
    doc = {"db": stamp, "runs": [[r.id, r.started, r.unit] for r in runs]}
    try:
        fd, temporary = tempfile.mkstemp(dir=db.parent, prefix=".tmp-index-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out)
        os.chmod(temporary, 0o644)
        os.replace(temporary, db.with_name(INDEX_NAME))
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def read(db: Path) -> list[IndexedRun] | None:
    """The runs of `db`, newest first, or None when the index is missing or stale."""
    try:
        doc = json.loads(db.with_name(INDEX_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("db") != _stamp(db):
        return None
    return [IndexedRun(int(i), float(started), str(unit)) for i, started, unit in doc["runs"]]
