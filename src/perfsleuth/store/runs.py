"""The run store: one DuckDB file under .perfsleuth/ holding every recorded run.

Schema (version in `schema_info`; see docs/store.md):
  runs(id, command, cwd, mode, started, duration_s, exit_status, host, cpu_model,
       kernel, git_rev, unit, total, samples, source, meta JSON)
  dsos(run_id, path, build_id)
  frames(run_id, id, function, dso, file, line, inlined, kernel)
  stacks(run_id, id, frames INTEGER[])            -- frame ids, leaf first
  threads(run_id, idx, tid, pid, name)
  samples(run_id, stack_id, thread, state, weight, count)
  documents(run_id, kind, name, data JSON)        -- findings, experiments, projections

DuckDB lets one process write at a time, so every access opens the file
briefly and retries while another perfsleuth holds the lock; recording never
holds it. Each run is written in one transaction: a failure leaves nothing.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NothingStored, StoreBusy, UserError
from ..model import documents
from ..model.profile import Frame, Profile, Thread
from ..model.run import LoadedRun, Recording, RunInfo
from ..model.timeline import Timeline
from . import run_index
from .documents import decode
from .layout import DB_NAME, SCHEMA_VERSION, store_root
from .run_index import IndexedRun, resolve

if TYPE_CHECKING:
    import _duckdb as duckdb

LOCK_WAIT_S = 120.0
WRITE_LOCK = "write.lock"
# A writer appends rows and small documents, which DuckDB does on one thread: its pool of
# worker threads (one per CPU) only cost a fresh store's `import` ~0.006 CPU-s to start
WRITER_CONFIG: dict[str, str | bool | int | float | list[str]] = {"threads": 1}
SPACE_FACTOR = 2
SPACE_MARGIN = 1 << 20
DISK_FULL_MESSAGES = ("No space left on device", "Disk quota exceeded", "File too large")

# Each entry moves the schema from version i to i + 1. Append, never edit.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY, command VARCHAR, cwd VARCHAR, mode VARCHAR,
        started DOUBLE, duration_s DOUBLE, exit_status INTEGER, host VARCHAR,
        cpu_model VARCHAR, kernel VARCHAR, git_rev VARCHAR, unit VARCHAR,
        total DOUBLE, samples BIGINT, source VARCHAR, meta JSON);
    CREATE TABLE dsos (run_id INTEGER, path VARCHAR, build_id VARCHAR);
    CREATE TABLE frames (run_id INTEGER, id INTEGER, function VARCHAR, dso VARCHAR,
        file VARCHAR, line INTEGER, inlined BOOLEAN, kernel BOOLEAN);
    CREATE TABLE stacks (run_id INTEGER, id INTEGER, frames INTEGER[]);
    CREATE TABLE threads (run_id INTEGER, idx INTEGER, tid BIGINT, pid BIGINT, name VARCHAR);
    CREATE TABLE samples (run_id INTEGER, stack_id INTEGER, thread INTEGER, state VARCHAR,
        weight DOUBLE, count BIGINT);
    CREATE TABLE documents (run_id INTEGER, kind VARCHAR, name VARCHAR, data JSON);
    """,
]

RUN_COLUMNS = (
    "id",
    "command",
    "cwd",
    "mode",
    "started",
    "duration_s",
    "exit_status",
    "host",
    "cpu_model",
    "kernel",
    "git_rev",
    "unit",
    "total",
    "samples",
    "source",
    "meta",
)


Columns = dict[str, Sequence[Any]]


def _profile_tables(run_id: int, p: Profile) -> dict[str, Columns]:
    """The profile's rows, as columns in each store table's order."""
    n = len(p.frames)
    return {
        "frames": {
            "run_id": [run_id] * n,
            "id": range(n),
            "function": [f.function for f in p.frames],
            "dso": [f.dso for f in p.frames],
            "file": [f.file for f in p.frames],
            "line": [f.line for f in p.frames],
            "inlined": [f.inlined for f in p.frames],
            "kernel": [f.kernel for f in p.frames],
        },
        "stacks": {
            "run_id": [run_id] * len(p.stacks),
            "id": range(len(p.stacks)),
            "frames": [list(s) for s in p.stacks],
        },
        "threads": {
            "run_id": [run_id] * len(p.threads),
            "idx": range(len(p.threads)),
            "tid": [t.tid for t in p.threads],
            "pid": [t.pid for t in p.threads],
            "name": [t.name for t in p.threads],
        },
        "samples": {
            "run_id": [run_id] * len(p.sample_stack),
            "stack_id": p.sample_stack,
            "thread": p.sample_thread,
            "state": p.sample_state,
            "weight": p.sample_weight,
            "count": p.sample_count,
        },
    }


def _rows(table: str, columns: Columns) -> Iterator[tuple[Any, ...]]:
    """The rows of COLUMNS, or a ValueError before any when their lengths differ (an
    appender keeps the rows before a bad one)."""
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{table}: columns of different lengths {lengths}")
    return zip(*columns.values(), strict=True)


def _cell_bytes(values: Sequence[Any]) -> int:
    """About what a column takes in memory: 8 bytes a value, a string's characters, 4
    bytes a list item."""
    first = next((v for v in values if v is not None), None)
    if isinstance(first, str):
        return sum(8 + len(v or "") for v in values)
    if isinstance(first, list):
        return sum(8 + 4 * len(v) for v in values)
    return 8 * len(values)


def _space_needed(tables: dict[str, Columns]) -> int:
    """Bytes a run's rows may take before DuckDB compresses them: they are written twice
    (the write-ahead log, then the file); the margin covers blocks and documents."""
    rows = sum(_cell_bytes(v) for columns in tables.values() for v in columns.values())
    return SPACE_FACTOR * rows + SPACE_MARGIN


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    import _duckdb as duckdb

    # A failed COMMIT has ended the transaction already; its error is the one to tell.
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK")


def _disk_full(e: BaseException) -> bool:
    if isinstance(e, OSError):
        return e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    import _duckdb as duckdb

    text = str(e)
    return isinstance(e, duckdb.Error) and any(m in text for m in DISK_FULL_MESSAGES)


def _free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def _mb(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on PATH for one writer, waiting up to LOCK_WAIT_S."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise UserError(
            f"cannot write to the store {path.parent}: {e.strerror}; "
            "check its permissions or pass --store PATH"
        ) from e
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as e:
                if time.monotonic() > deadline:
                    raise StoreBusy(
                        f"the store {path.parent} stayed locked by another perfsleuth process "
                        f"for {LOCK_WAIT_S:.0f} s; wait for it to finish and retry"
                    ) from e
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _busy(error: Exception) -> bool:
    text = str(error).lower()
    return "lock" in text or "different configuration" in text


class Store:
    """Access to the store folder. Cheap to create; connections are short-lived."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.root = store_root(path)
        self.db = self.root / DB_NAME

    @contextmanager
    def _connect(self, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if write:
            with self._writing() as con:
                yield con
            return
        con = self._open_read()
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def _writing(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A write connection, one writer at a time. DuckDB keeps the file as large as a
        failed write made it, so after a failure the files are cut back to their size
        before it (safe: the old state lies wholly within that size), and a full disk is
        said as such."""
        self._make_root()
        with _locked(self.root / WRITE_LOCK):
            con = self._open_write()
            # Settle what opening wrote (a migration, a replayed log) into the file now:
            # closing would, and a cut back must not undo it.
            con.execute("CHECKPOINT")
            sizes = self._sizes()
            try:
                yield con
            except BaseException as e:
                con.close()
                grown = sum(self._sizes().values()) - sum(sizes.values())
                self._cut_back(sizes)
                if _disk_full(e):
                    raise self._full_disk(grown, "more than ") from e
                raise
            runs = _indexed_runs(con)
            con.close()
            run_index.write(self.db, runs)

    def _sizes(self) -> dict[Path, int]:
        files = (self.db, self.db.with_name(self.db.name + ".wal"))
        return {f: f.stat().st_size if f.exists() else -1 for f in files}

    @staticmethod
    def _cut_back(sizes: dict[Path, int]) -> None:
        for path, size in sizes.items():
            if size < 0:
                path.unlink(missing_ok=True)
            elif path.exists() and path.stat().st_size > size:
                os.truncate(path, size)

    def _full_disk(self, needed: int, at_least: str = "") -> UserError:
        free = _free_bytes(self.root)
        return UserError(
            f"the store's disk is full: {at_least}{_mb(needed)} needed, {_mb(free)} free in "
            f"{self.root}/; free some space, or record into another --store"
        )

    def _check_space(self, needed: int) -> None:
        if _free_bytes(self.root) < needed:
            raise self._full_disk(needed)

    def _open_write(self) -> duckdb.DuckDBPyConnection:
        self._make_root()
        con = self._open(write=True)
        try:
            self._migrate(con)
        except BaseException:
            con.close()
            raise
        return con

    def _open_read(self) -> duckdb.DuckDBPyConnection:
        if not self.db.exists():
            raise NothingStored(
                f"no runs stored in {self.root}/ yet; record one with "
                "`perfsleuth record -- CMD` or pass --store PATH"
            )
        con = self._open(write=False)
        if self._read_version(con) == SCHEMA_VERSION:
            self._index_again_if_stale(con)
            return con
        con.close()
        self._open_write().close()  # migrates, or refuses a newer schema clearly
        return self._open(write=False)

    def _index_again_if_stale(self, con: duckdb.DuckDBPyConnection) -> None:
        """Write the run index again when it no longer matches the file: a store copied
        with `cp -r` (new modification times) or written by another DuckDB client sent
        every later command back to DuckDB (`diff` of speedtest1's two count runs: 0.30
        CPU-s each time, against 0.07 through the index). No writer can open the file
        while this read-only connection holds it, so the runs read are the file's."""
        if run_index.read(self.db) is None:
            run_index.write(self.db, _indexed_runs(con))

    def _make_root(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create the store folder {self.root}: {e.strerror}") from e

    def _open(self, write: bool) -> duckdb.DuckDBPyConnection:
        # imported when the store is opened (`--help` and the agent never do); DuckDB's
        # engine alone: the package adds 0.06 CPU-s of a relation API the store does not use
        import _duckdb as duckdb

        deadline = time.monotonic() + LOCK_WAIT_S
        delay = 0.02
        while True:
            try:
                return duckdb.connect(
                    str(self.db), read_only=not write, config=WRITER_CONFIG if write else {}
                )
            except (duckdb.IOException, duckdb.ConnectionException) as e:
                # another process's lock; or, in this process (`serve` advising a run while
                # its pages read the store), a connection of the other kind: DuckDB opens
                # one file in one process with one configuration at a time
                if not _busy(e):
                    raise UserError(f"cannot open the store {self.db}: {e}") from e
                if time.monotonic() > deadline:
                    raise StoreBusy(
                        f"the store {self.db} stayed locked by another perfsleuth process "
                        f"for {LOCK_WAIT_S:.0f} s; wait for it to finish and retry"
                    ) from e
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
            except duckdb.Error as e:
                raise UserError(
                    f"the store {self.db} is unreadable ({e}); move it away and record again"
                ) from e

    @staticmethod
    def _version(con: duckdb.DuckDBPyConnection) -> int:
        con.execute("CREATE TABLE IF NOT EXISTS schema_info (version INTEGER)")
        row = con.execute("SELECT max(version) FROM schema_info").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        version = self._version(con)
        if version > SCHEMA_VERSION:
            raise UserError(
                f"the store {self.db} has schema version {version}, newer than this "
                f"perfsleuth understands ({SCHEMA_VERSION}); upgrade perfsleuth"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            con.execute("BEGIN TRANSACTION")
            con.execute(MIGRATIONS[target - 1])
            con.execute("INSERT INTO schema_info VALUES (?)", [target])
            con.execute("COMMIT")

    @staticmethod
    def _read_version(con: duckdb.DuckDBPyConnection) -> int:
        row = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_info'"
        ).fetchone()
        if not row or not row[0]:
            return 0
        got = con.execute("SELECT max(version) FROM schema_info").fetchone()
        return int(got[0]) if got and got[0] is not None else 0

    # -- writing -------------------------------------------------------------

    def add_run(self, info: RunInfo, recording: Recording) -> RunInfo:
        """Store a run (its facts, its recording's profile and documents) in one
        transaction; returns its facts as stored, with the new run id."""
        info = info.recorded(recording)
        profile = recording.profile
        with self._connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                row = con.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchone()
                run_id = int(row[0]) if row else 1
                tables = _profile_tables(run_id, profile)
                self._check_space(_space_needed(tables))
                self._insert_run(con, run_id, info, profile)
                self._append_tables(con, tables)
                for doc in recording.documents:
                    self._insert_document(con, run_id, doc.kind, doc.name, doc.data)
                if profile.timeline:
                    timeline = profile.timeline
                    self._insert_document(con, run_id, timeline.KIND, timeline.NAME, timeline)
                if profile.leaf_costs:
                    costs = profile.leaf_costs
                    self._insert_document(con, run_id, costs.KIND, costs.NAME, costs)
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
        return replace(
            info,
            id=run_id,
            unit=profile.unit,
            total=profile.total,
            samples=profile.num_samples,
        )

    @staticmethod
    def _insert_run(
        con: duckdb.DuckDBPyConnection, run_id: int, info: RunInfo, profile: Profile
    ) -> None:
        con.execute(
            f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                info.command,
                info.cwd,
                info.mode,
                info.started,
                info.duration_s,
                info.exit_status,
                info.host,
                info.cpu_model,
                info.kernel,
                info.git_rev,
                profile.unit,
                profile.total,
                profile.num_samples,
                info.source,
                json.dumps({**profile.meta, **info.meta}, default=str),
            ],
        )
        if info.dsos:
            dsos: Columns = {
                "run_id": [run_id] * len(info.dsos),
                "path": [d.get("path", "") for d in info.dsos],
                "build_id": [d.get("build_id", "") for d in info.dsos],
            }
            Store._append_tables(con, {"dsos": dsos})

    @staticmethod
    def _append_tables(con: duckdb.DuckDBPyConnection, tables: dict[str, Columns]) -> None:
        for name, columns in tables.items():
            rows = _rows(name, columns)
            appender = con.appender(name)
            appender.append_rows(rows)
            appender.flush()

    def put_document(self, run_id: int, kind: str, name: str, data: Any) -> None:
        """Replace the document (findings, experiment, projection...) of a run."""
        with self._connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                self._insert_document(con, run_id, kind, name, data)
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise

    @staticmethod
    def _insert_document(
        con: duckdb.DuckDBPyConnection, run_id: int, kind: str, name: str, data: Any
    ) -> None:
        con.execute(
            "DELETE FROM documents WHERE run_id = ? AND kind = ? AND name = ?",
            [run_id, kind, name],
        )
        if hasattr(data, "to_json"):
            data = documents.dump(data)
        con.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?)",
            [run_id, kind, name, json.dumps(data, default=str)],
        )

    # -- reading -------------------------------------------------------------

    def runs(self) -> list[RunInfo]:
        """All runs, newest first."""
        with self._connect(write=False) as con:
            rows = con.execute(
                f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY id DESC"
            ).fetchall()
        return [_run_from_row(r) for r in rows]

    def resolve(self, ref: str | None) -> int:
        """A run id from `3`, `latest`, `latest~1`..."""
        with self._connect(write=False) as con:
            ids = self._ids(con)
        return resolve(ref, ids, self.root)

    @staticmethod
    def _ids(con: duckdb.DuckDBPyConnection) -> list[int]:
        return [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id DESC").fetchall()]

    def indexed(self, ref: str | None) -> IndexedRun | None:
        """The run `ref` names, from the run index (store/run_index.py) without opening
        DuckDB; None when the index is missing or stale (ask `resolve`)."""
        return run_index.find(self.root, ref)

    def run_info(self, run_id: int) -> RunInfo:
        with self._connect(write=False) as con:
            return self._run_info(con, run_id)

    def _run_info(self, con: duckdb.DuckDBPyConnection, run_id: int) -> RunInfo:
        row = con.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE id = ?", [run_id]
        ).fetchone()
        if row is None:
            raise UserError(f"no run {run_id} in {self.root}/")
        info = _run_from_row(row)
        info.dsos = self._dsos(con, run_id)
        return info

    @staticmethod
    def _dsos(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict]:
        rows = con.execute(
            "SELECT path, build_id FROM dsos WHERE run_id = ? ORDER BY path", [run_id]
        ).fetchall()
        return [{"path": p, "build_id": b} for p, b in rows]

    def load_run(self, run_id: int) -> LoadedRun:
        """The run as one value: facts, profile with its timeline (read when first
        used), exact counts and cache projections, read in one connection."""
        with self._connect(write=False) as con:
            return self._load_run(con, run_id)

    def load_ref(self, ref: str | None) -> LoadedRun:
        """`load_run` of the run `ref` names (`3`, `latest`, `latest~1`...)."""
        return self.load_refs(ref)[0]

    def load_refs(self, *refs: str | None) -> list[LoadedRun]:
        """load_ref of each ref, through one connection (opening one costs more than
        reading a count run's counts)."""
        with self._connect(write=False) as con:
            ids = self._ids(con)
            return [self._load_run(con, resolve(ref, ids, self.root)) for ref in refs]

    def _load_run(self, con: duckdb.DuckDBPyConnection, run_id: int) -> LoadedRun:
        from ..model.counts import Counts  # a loaded run's types: storing needs neither
        from ..model.cpu_cache import CacheProjections

        kinds = (Counts.KIND, CacheProjections.KIND)
        info = self._run_info(con, run_id)
        rows = con.execute(
            "SELECT kind, name, data FROM documents WHERE run_id = ? AND kind IN (?, ?)",
            [run_id, *kinds],
        ).fetchall()
        docs: dict[str, dict[str, Any]] = {kind: {} for kind in kinds}
        for kind, name, data in rows:
            docs[kind][name] = decode(kind, json.loads(data))
        counts: Counts | None = docs[Counts.KIND].get(Counts.NAME)
        cache: dict[str, CacheProjections] = docs[CacheProjections.KIND]
        return LoadedRun(info, lambda: self.load(run_id), counts=counts, cache=cache)

    def load(self, run_id: int) -> Profile:
        """The run's profile with its timeline, as they were stored."""
        with self._connect(write=False) as con:
            row = con.execute("SELECT unit, meta FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise UserError(f"no run {run_id} in {self.root}/")
            frames = con.execute(
                "SELECT function, dso, file, line, inlined, kernel FROM frames "
                "WHERE run_id = ? ORDER BY id",
                [run_id],
            ).fetchall()
            stacks = con.execute(
                "SELECT frames FROM stacks WHERE run_id = ? ORDER BY id", [run_id]
            ).fetchall()
            threads = con.execute(
                "SELECT tid, pid, name FROM threads WHERE run_id = ? ORDER BY idx", [run_id]
            ).fetchall()
            samples = con.execute(
                "SELECT stack_id, weight, count, thread, state FROM samples WHERE run_id = ?",
                [run_id],
            ).fetchall()
            dsos = self._dsos(con, run_id)
            timeline = self._timeline(con, run_id)
        profile = Profile(
            frames=[Frame(*f) for f in frames],
            stacks=[tuple(s[0]) for s in stacks],
            threads=[Thread(*t) for t in threads],
            unit=row[0],
            meta=json.loads(row[1]) if row[1] else {},
            dsos=dsos,
            timeline=timeline,
        )
        if samples:
            cols = list(zip(*samples, strict=True))
            profile.sample_stack = list(cols[0])
            profile.sample_weight = list(cols[1])
            profile.sample_count = list(cols[2])
            profile.sample_thread = list(cols[3])
            profile.sample_state = list(cols[4])
        return profile

    @staticmethod
    def _timeline(con: duckdb.DuckDBPyConnection, run_id: int) -> Timeline | None:
        row = con.execute(
            "SELECT data FROM documents WHERE run_id = ? AND kind = ? AND name = ?",
            [run_id, Timeline.KIND, Timeline.NAME],
        ).fetchone()
        return decode(Timeline.KIND, json.loads(row[0])) if row else None

    def documents(self, run_id: int, kind: str) -> dict[str, Any]:
        """name -> data of a run's documents of one kind (typed if the kind is registered
        in store/documents.py)."""
        if not self.db.exists():
            return {}
        with self._connect(write=False) as con:
            rows = con.execute(
                "SELECT name, data FROM documents WHERE run_id = ? AND kind = ?",
                [run_id, kind],
            ).fetchall()
        return {name: decode(kind, json.loads(data)) for name, data in rows}

    def documents_of_kind(self, kind: str) -> dict[int, dict[str, Any]]:
        """run id -> name -> data of every run's documents of one kind, in one read."""
        if not self.db.exists():
            return {}
        with self._connect(write=False) as con:
            rows = con.execute(
                "SELECT run_id, name, data FROM documents WHERE kind = ?", [kind]
            ).fetchall()
        out: dict[int, dict[str, Any]] = {}
        for run_id, name, data in rows:
            out.setdefault(int(run_id), {})[name] = decode(kind, json.loads(data))
        return out


# ASCII digits only: str.isdigit() also takes '²', which int() refuses.
def _run_from_row(row: tuple) -> RunInfo:
    values = dict(zip(RUN_COLUMNS, row, strict=True))
    return RunInfo(
        id=int(values["id"]),
        command=values["command"] or "",
        cwd=values["cwd"] or "",
        mode=values["mode"] or "",
        started=values["started"] or 0.0,
        duration_s=values["duration_s"],
        exit_status=values["exit_status"],
        host=values["host"] or "",
        cpu_model=values["cpu_model"] or "",
        kernel=values["kernel"] or "",
        git_rev=values["git_rev"] or "",
        unit=values["unit"] or "",
        total=values["total"] or 0.0,
        samples=values["samples"] or 0,
        source=values["source"] or "",
        meta=json.loads(values["meta"]) if values["meta"] else {},
    )


def _indexed_runs(con: duckdb.DuckDBPyConnection) -> list[IndexedRun]:
    """What the run index keeps of each run, newest first."""
    rows = con.execute("SELECT id, started, unit FROM runs ORDER BY id DESC").fetchall()
    return [IndexedRun(int(i), t or 0.0, u or "") for i, t, u in rows]
