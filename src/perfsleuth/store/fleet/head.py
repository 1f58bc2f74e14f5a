"""The collector's head: pushes held in memory and a write-ahead log, flushed in batches.

A push is acknowledged once its window is in the log and fsynced (appends that meet
share the fsync); the Parquet files come later, for many windows at once: every
FLUSH_S seconds or FLUSH_ROWS sample rows, and when the collector stops. A flush
writes, in this order, one marker per hour partition naming its windows (batches.py: it
claims them for this batch, so a window pushed to two collectors is stored by the one
that claims it first; the markers made durable together, by one sync), each day's
stacks and frames, one samples file per hour partition (h-<segment>.parquet, created
only if absent), and deletes the segment last. A crash at any point leaves the
segment, which the next collector to start flushes again: what was written is found
and kept, nothing is counted twice.

Queries read the segments too (reading.py): a segment's windows of a partition are
counted from the log until that partition holds its h- file.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ...model.fleet import Window
from .appending import ensure_layout, marker_info
from .batches import Batches
from .filesystem import Files
from .layout import HEAD_PREFIX, day, hour_partition, samples_dir, stamp
from .wal import SUFFIX, Record, Segment, claim_orphan, encode, read_segment, segments
from .writer import distinct_of, parquet_bytes, table_of, window_record

FLUSH_S = 30.0
FLUSH_ROWS = 200_000
# Requests of a flush in flight at once.
PARALLEL_REQUESTS = 16
# Stack or frame ids of one table and day a head remembers having written (~80 bytes each).
ID_LIMIT = 1 << 18


def head_folder(files: Files, root: str) -> Path:
    """Where a store's head lives: in a folder store's own `head/` (every reader of the
    folder reads it), for S3 on this machine's disk (readers on this machine read it)."""
    if files.local:
        return Path(files.base) / "head"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "perfsleuth" / "head" / hashlib.blake2b(root.encode(), digest_size=8).hexdigest()


class Head:
    """`append(window)` from any number of threads; a thread flushes in the background."""

    def __init__(
        self,
        files: Files,
        folder: Path,
        flush_s: float = FLUSH_S,
        flush_rows: int = FLUSH_ROWS,
        batches: Batches | None = None,
    ) -> None:
        self.files = files
        self.batches = batches or Batches(files)
        self.folder = folder
        self.flush_s = flush_s
        self.flush_rows = flush_rows
        self.dropped = 0  # windows a flush found claimed by another batch
        self._pool = ThreadPoolExecutor(PARALLEL_REQUESTS, thread_name_prefix="fleet-flush")
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._stop = threading.Event()
        self._unflushed: list[tuple[Segment, list[Record]]] = []
        self._written = Written()  # used by flushes only, which run one at a time
        folder.mkdir(parents=True, exist_ok=True)
        ensure_layout(files)
        self.recover()
        self._open()
        self._flusher = threading.Thread(target=self._flush_loop, name="fleet-head", daemon=True)
        self._flusher.start()

    def append(self, window: Window) -> bool:
        """Log `window` durably; False when its id is in the head or stored already."""
        return self.append_all([window])[0]

    def append_all(self, windows: list[Window]) -> list[bool]:
        """Log a push's windows with one write and one fsync; for each, whether it was
        new (not in the head, not stored already, not earlier in `windows`).

        The head forgets a flushed batch's ids only after its marker exists, so a
        window not in the head when first looked at is stored iff a marker holds it."""
        answers, segment, offset = self.log_all(windows)
        segment.sync(offset)
        return answers

    def log_all(self, windows: list[Window]) -> tuple[list[bool], Segment, int]:
        """append_all without its fsync: the windows are durable (and may be
        acknowledged) once `segment.sync(offset)` has returned."""
        with self._lock:
            fresh = [w for w in windows if w.id not in self._ids]
        records, logged = {}, {}
        for window in fresh:
            if window.id in records or self.batches.stored(hour_partition(window.start), window.id):
                continue
            columns, tables = window_record(window)
            marker = marker_info(window, columns.samples_total, 1)
            records[window.id] = Record(marker, columns)
            logged[window.id] = encode(marker, tables)
        with self._lock:
            new = {i: r for i, r in records.items() if i not in self._ids}  # pushed twice at once
            data = b"".join(logged[i] for i in new)
            segment = self._segment
            offset = segment.write(data) if new else 0
            self._ids.update(new)
            self._records.extend(new.values())
            self._rows += sum(r.columns.rows for r in new.values())
            full = self._rows >= self.flush_rows
        if full:
            self._pool.submit(self.flush)
        answers, seen = [], set()
        for window in windows:
            answers.append(window.id in new and window.id not in seen)
            seen.add(window.id)
        return answers, segment, offset

    def flush(self) -> None:
        """Write the head's windows to Parquet (see the module's docstring); a batch that
        fails stays in the head, its segment kept, and goes first in the next flush."""
        with self._flushing:
            with self._lock:
                if self._records:
                    self._unflushed.append((self._segment, self._records))
                    self._open(keep_ids=self._ids)
            while self._unflushed:
                segment, records = self._unflushed[0]
                segment.sync(segment.written)
                self.dropped += write_batch(
                    self.files, segment.name, records, self._pool, self._written, self.batches
                )
                with self._lock:
                    self._ids -= {r.window_id for r in records}
                segment.path.unlink()
                segment.close()  # its flock kept until now: no one else flushes it meanwhile
                self._unflushed.pop(0)

    def close(self) -> None:
        """Flush what the head holds and stop; what cannot be flushed now stays in the
        log for the next collector to start."""
        self._stop.set()
        self._flusher.join()
        try:
            self.flush()
        finally:
            if not self._segment.written:
                self._segment.path.unlink()
            self._segment.close()
            self._pool.shutdown()

    def recover(self) -> None:
        """Flush the segments whose collector died (their flock is free)."""
        for path in segments(self.folder):
            fd = claim_orphan(path)
            if fd is None:
                continue
            try:
                records = read_segment(path)
                if records:
                    name = path.name[: -len(SUFFIX)]
                    self.dropped += write_batch(
                        self.files, name, records, self._pool, batches=self.batches
                    )
                path.unlink()
            finally:
                os.close(fd)

    def _open(self, keep_ids: set[str] | None = None) -> None:
        """A new segment (the caller holds the lock, or no thread runs yet)."""
        self._segment = Segment(self.folder / f"{stamp()}-{os.getpid()}{SUFFIX}")
        self._records: list[Record] = []
        self._ids: set[str] = set(keep_ids or ())  # a flushing batch's ids are still here
        self._rows = 0
        self._opened = time.monotonic()

    def _flush_loop(self) -> None:
        while not self._stop.wait(min(1.0, self.flush_s)):
            if time.monotonic() - self._opened < self.flush_s:
                continue
            try:
                if self._records or self._unflushed:
                    self.flush()
                else:
                    self._opened = time.monotonic()
                self.recover()  # a collector beside this one died
            except Exception as e:  # noqa: BLE001 -- the store is down: the log keeps the windows
                first = next(iter(str(e).splitlines()), type(e).__name__)
                print(f"perfsleuth: the head's flush failed ({first}); retrying", file=sys.stderr)


class Written:
    """The stack and frame ids a head's flushes wrote, per table and day, and the files
    holding them: a fleet sends the same stacks in every window, and writing them again
    at every flush made each day's dictionaries as many copies as flushes, which every
    query before compaction read. Ids are each table's first column. Bounded: past
    ID_LIMIT ids a day starts over."""

    def __init__(self) -> None:
        self._days: dict[tuple[str, str], tuple[set[str], set[int]]] = {}

    def unwritten(self, files: Files, table: str, dt: str, rows: pa.Table) -> pa.Table:
        """`rows` without those written already; every row when a file that held them
        is gone (compacted into another, or expired with its day: written again)."""
        held, ids = self._days.get((table, dt), (set(), set()))
        if not ids:
            return rows
        if not held <= set(files.names(f"{table}/dt={dt}")) or len(ids) > ID_LIMIT:
            del self._days[table, dt]
            return rows
        key = rows.column(0)
        return rows.filter(pc.invert(pc.is_in(key, value_set=pa.array(ids, key.type))))

    def wrote(self, table: str, dt: str, file: str, rows: pa.Table) -> None:
        held, ids = self._days.setdefault((table, dt), (set(), set()))
        held.add(file)
        ids.update(rows.column(0).to_pylist())


def write_batch(
    files: Files,
    name: str,
    records: list[Record],
    pool: ThreadPoolExecutor,
    written: Written | None = None,
    batches: Batches | None = None,
) -> int:
    """Store a segment's records as batch `name`: its markers, dictionaries (the rows
    `written` does not hold already), samples files; how many windows another batch
    had claimed (left out)."""
    ensure_layout(files)
    first: dict[str, Record] = {}
    for record in records:
        first.setdefault(record.window_id, record)
    unique = list(first.values())
    of_partition: dict[str, list[dict]] = {}
    for record in unique:
        of_partition.setdefault(record.partition, []).append(record.marker)
    claims = batches or Batches(files)
    held: set[str] = set()
    for partition, markers in of_partition.items():
        held |= claims.claim(partition, name, markers, len(unique))
    files.sync()  # the markers durable before what they claim is written
    mine = [r for r in unique if r.window_id in held]
    by_day: dict[str, list[Record]] = {}
    by_partition: dict[str, list[Record]] = {}
    for record in mine:
        if record.columns.rows:
            by_day.setdefault(day(float(record.marker["start"])), []).append(record)
            by_partition.setdefault(record.partition, []).append(record)
    known = written or Written()
    writes = [
        (table, dt, f"b-{stamp()}.parquet", rows)
        for dt, rs in by_day.items()
        for table in ("frames", "stacks")
        if (
            rows := known.unwritten(files, table, dt, distinct_of([r.columns for r in rs], table))
        ).num_rows
    ]

    def put(table: str, dt: str, file: str, rows: pa.Table) -> None:
        files.put(f"{table}/dt={dt}/{file}", parquet_bytes(rows))
        known.wrote(table, dt, file, rows)

    list(pool.map(lambda w: put(*w), writes))
    list(pool.map(lambda p: _samples_file(files, name, *p), by_partition.items()))
    return len(unique) - len(mine)


def _samples_file(files: Files, name: str, partition: str, records: list[Record]) -> None:
    table = table_of([r.columns for r in records], "samples")
    files.create(
        f"{samples_dir('raw', partition)}/{HEAD_PREFIX}{name}.parquet", parquet_bytes(table)
    )
