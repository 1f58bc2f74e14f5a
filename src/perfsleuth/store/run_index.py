"""The store's run index: each run's id, start time and unit, in a small file beside
runs.duckdb (in marshal's form: read without json and the re it imports, docs/counts.md),
so that a command answered by files kept for a run (its TopN in answers/, a count run's
counts) resolves `latest~N` without importing DuckDB, which alone costs
more CPU than the rest of `perfsleuth top` (0.15-0.2 CPU-s).

Every write to the store rewrites it, after DuckDB has closed the file, with the size
and modification time runs.duckdb has then. It is believed only while the file still
has them and no write-ahead log lies beside it: a write by anything else (an older
perfsleuth, a DuckDB client, a write cut short) sends readers back to DuckDB.

Paths here are strings (os.path), as in answers.py: its readers import no pathlib.
"""

from __future__ import annotations

import marshal
import os

from ..errors import UserError
from .layout import DB_NAME

INDEX_NAME = "runs-index.bin"  # runs-index.json until 2026-12-07: not read


class IndexedRun:
    """What the index knows of a run: enough to name the files kept for it. A plain
    class: the views read the index without importing typing (docs/counts.md)."""

    __slots__ = ("id", "started", "unit")

    def __init__(self, id: int, started: float, unit: str) -> None:
        self.id = id
        self.started = started
        self.unit = unit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexedRun) and (*self.key, self.unit) == (*other.key, other.unit)

    @property
    def key(self) -> tuple[int, float]:
        """(id, start time): what names the files kept for the run in answers/."""
        return self.id, self.started


StrPath = str | os.PathLike[str]  # the database's path or the store's folder


def _stamp(db: StrPath) -> list[int] | None:
    """runs.duckdb's size and mtime, or None while a write-ahead log is beside it."""
    if os.path.exists(f"{os.fspath(db)}.wal"):
        return None
    try:
        st = os.stat(db)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def write(db: StrPath, runs: list[IndexedRun]) -> None:
    """Keep the index of `db`'s runs (newest first); call it once DuckDB closed the file.
    Not kept (a read-only folder, a full disk), the old index no longer matches the file,
    and readers ask DuckDB."""
    import tempfile  # writers only: readers start without it

    stamp = _stamp(db)
    if stamp is None:
        return
    doc = {"db": stamp, "runs": [[r.id, r.started, r.unit] for r in runs]}
    try:
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(db), prefix=".tmp-index-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            marshal.dump(doc, out)
        os.chmod(temporary, 0o644)
        os.replace(temporary, os.path.join(os.path.dirname(db), INDEX_NAME))
    except OSError:
        from contextlib import suppress  # writers only, as tempfile

        with suppress(FileNotFoundError):
            os.unlink(temporary)


def read(db: StrPath) -> list[IndexedRun] | None:
    """The runs of `db`, newest first, or None when the index is missing or stale."""
    try:
        with open(os.path.join(os.path.dirname(db), INDEX_NAME), "rb") as index:
            doc = marshal.loads(index.read())
        if not isinstance(doc, dict) or doc.get("db") != _stamp(db):
            return None
        return [IndexedRun(int(i), float(started), str(unit)) for i, started, unit in doc["runs"]]
    except (OSError, EOFError, ValueError, TypeError):  # missing, cut short or damaged
        return None


def find(root: StrPath, ref: str | None) -> IndexedRun | None:
    """The run `ref` names in the store at `root`, from its index without opening DuckDB;
    None when the index is missing or stale (ask the store)."""
    runs = read(os.path.join(root, DB_NAME))
    if runs is None:
        return None
    ids = [r.id for r in runs]
    return runs[ids.index(resolve(ref, ids, root))]


def is_run_reference(ref: str) -> bool:
    """Whether `ref` is written as a run reference: an id, `latest` or `latest~N` (ASCII
    digits; no re: docs/counts.md)."""
    steps = ref.removeprefix("latest~") if ref.startswith("latest~") else ref
    return ref == "latest" or (steps.isascii() and steps.isdigit())


def resolve(ref: str | None, ids: list[int], root: StrPath) -> int:
    """A run id from `3`, `latest`, `latest~1`... among `ids`, the store's newest first
    (the server keeps them between requests)."""
    ref = (ref or "latest").strip()
    if not ids:
        raise UserError(f"the store {_named(root)}/ has no runs yet; record one first")
    if not is_run_reference(ref):
        if ref.startswith("latest"):
            raise UserError(f"bad run reference {ref!r}: use an id, latest or latest~N")
        raise UserError(f"no run {ref!r} in {_named(root)}/; `perfsleuth runs` lists them")
    if ref.startswith("latest"):
        steps = int(ref[len("latest~") :] or 0)
        if steps >= len(ids):
            raise UserError(f"{ref}: the store has only {len(ids)} run(s)")
        return int(ids[steps])
    if int(ref) in ids:
        return int(ref)
    raise UserError(f"no run {ref!r} in {_named(root)}/; `perfsleuth runs` lists them")


def _named(root: StrPath) -> str:
    """The store's folder as pathlib writes it (`.perfsleuth/` given is `.perfsleuth`),
    as the store's own messages name it; pathlib is imported only for a message."""
    from pathlib import Path

    return str(Path(root))
