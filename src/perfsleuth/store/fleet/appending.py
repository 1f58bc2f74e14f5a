"""Appending windows: group commit, so a store on S3 keeps up with a folder.

Windows appended at the same time from several threads (the collector's requests) are
written together by one of them, the others waiting for its answer: their stacks and
frames as one file per day (content-addressed rows: a duplicate costs only bytes), then
each window's samples file and marker, every request of a step sent at once. Each
window keeps its own samples file (w-<window id>.parquet), created only if absent, and
marker, so every promise of a single append holds for each window of a group: it is
stored once, it is durable when append returns, and a crash leaves nothing half-read.
On S3 a request costs a round trip; a folder pays an fsync per file instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ...model.fleet import LABELS, Window
from .batches import Batches
from .filesystem import Files
from .layout import LAYOUT_FILE, LAYOUT_VERSION, day, hour_partition, marker, samples_dir, stamp
from .layout import window_file as samples_file
from .writer import WindowTables, parquet_bytes, window_tables

T = TypeVar("T")
# Requests in flight at once; a folder's writes are fsyncs, an S3 store's round trips.
PARALLEL_REQUESTS = 16


@dataclass
class _Request:
    window: Window
    tables: WindowTables
    done: threading.Event = field(default_factory=threading.Event)
    stored: bool = False
    error: BaseException | None = None


class Appender:
    """`append(window)` from any number of threads; see the module's docstring."""

    def __init__(self, files: Files, batches: Batches | None = None) -> None:
        self.files = files
        self.batches = batches or Batches(files)
        self._pool = ThreadPoolExecutor(PARALLEL_REQUESTS, thread_name_prefix="fleet-append")
        self._changed = threading.Condition()
        self._pending: list[_Request] = []
        self._committing = False
        self._layout_written = False

    def append(self, window: Window) -> bool:
        request = _Request(window, window_tables(window))
        with self._changed:
            self._pending.append(request)
            while self._committing and not request.done.is_set():
                self._changed.wait()
            if request.done.is_set():
                return _answer(request)
            self._committing = True
            group, self._pending = self._pending, []
        try:
            self._commit(group)
        finally:
            with self._changed:
                self._committing = False
                self._changed.notify_all()
        return _answer(request)

    def _commit(self, group: list[_Request]) -> None:
        try:
            self._commit_group(group)
        except BaseException as e:  # every waiter hears of it, not only the leader
            for request in group:
                if not request.done.is_set():
                    request.error = e
                    request.done.set()

    def _commit_group(self, group: list[_Request]) -> None:
        first: dict[str, _Request] = {}
        for request in group:
            if request.window.id in first:  # the same window twice in one group
                _finish(request, False)
            else:
                first[request.window.id] = request
        todo = list(first.values())
        if not self._layout_written:
            ensure_layout(self.files)
            self._layout_written = True
        marked = self._each(
            todo, lambda r: self.batches.stored(hour_partition(r.window.start), r.window.id)
        )
        todo = [r for r, m in zip(todo, marked, strict=True) if not _finish_if(r, m, False)]
        self._write_dictionaries(todo)
        created = self._each(todo, self._create_samples)
        self._each(todo, lambda r: self._mark(r, len(todo)))
        for request, fresh in zip(todo, created, strict=True):
            _finish(request, fresh)

    def _each(self, requests: list[_Request], step: Callable[[_Request], T]) -> list[T]:
        """`step` of every request at once; the first failure is raised after all ended."""
        futures: list[Future[T]] = [self._pool.submit(step, r) for r in requests]
        for f in futures:
            f.exception()  # wait for all: no write of this group outlives the commit
        return [f.result() for f in futures]

    def _write_dictionaries(self, requests: list[_Request]) -> None:
        """Each day's stacks and frames of the group, as one file per table."""
        by_day: dict[str, list[WindowTables]] = {}
        for r in requests:
            if r.tables.samples.num_rows:
                by_day.setdefault(day(r.window.start), []).append(r.tables)
        writes = []
        for dt, tables in by_day.items():
            name = f"b-{stamp()}.parquet"
            for table, key in (("frames", "frame_id"), ("stacks", "stack_id")):
                rows = distinct([getattr(t, table) for t in tables], key)
                writes.append((f"{table}/dt={dt}/{name}", rows))
        futures = [self._pool.submit(self.files.put, rel, parquet_bytes(t)) for rel, t in writes]
        for f in futures:
            f.exception()
        for f in futures:
            f.result()

    def _create_samples(self, request: _Request) -> bool:
        """The window's samples file; False when a crashed append had written it (the
        marker, written next, completes that append)."""
        if not request.tables.samples.num_rows:
            return True
        window = request.window
        rel = f"{samples_dir('raw', hour_partition(window.start))}/{samples_file(window.id)}"
        return self.files.create(rel, parquet_bytes(request.tables.samples)) is not None

    def _mark(self, request: _Request, group: int) -> None:
        samples = int(pc.sum(request.tables.samples.column("samples")).as_py() or 0)
        info = marker_info(request.window, samples, group)
        self.files.put(_marker(request.window), json.dumps(info).encode())


def marker_info(window: Window, samples: int, group: int) -> dict:
    """What a window's marker says of it (status.py and inventory.py read it)."""
    info = {
        "id": window.id,
        "host": window.labels.get("host", ""),
        "service": window.labels.get("service", ""),
        "start": window.start,
        "end": window.end,
        "samples": samples,
        "stored_at": time.time(),
        "group": group,  # windows written together: `fleet status` counts requests
    }
    libraries = {p.exe: sorted(p.libraries) for p in window.processes.values() if p.libraries}
    if libraries:
        info["libraries"] = libraries
        info["labels"] = {k: v for k, v in window.labels.items() if k not in LABELS}
    return info


def ensure_layout(files: Files) -> None:
    if not files.exists(LAYOUT_FILE):
        files.put(LAYOUT_FILE, json.dumps({"layout": LAYOUT_VERSION}).encode())


def _marker(window: Window) -> str:
    return marker(hour_partition(window.start), window.id)


def distinct(tables: list[pa.Table], key: str) -> pa.Table:
    table = pa.concat_tables(tables)
    ids = table.column(key).to_pylist()
    first: dict[int, int] = {}
    for i, value in enumerate(ids):
        first.setdefault(value, i)
    return table.take(sorted(first.values()))


def _finish(request: _Request, stored: bool) -> None:
    request.stored = stored
    request.done.set()


def _finish_if(request: _Request, condition: bool, stored: bool) -> bool:
    if condition:
        _finish(request, stored)
    return condition


def _answer(request: _Request) -> bool:
    request.done.wait()
    if request.error is not None:
        raise request.error
    return request.stored
