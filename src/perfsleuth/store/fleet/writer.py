"""A window as the fleet store's three tables: samples, stacks and frames."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from ...model.fleet import LABELS, Window
from ...model.profile import Frame
from .layout import FRAMES_SCHEMA, SAMPLES_SCHEMA, STACKS_SCHEMA, frame_id, stack_id

V = TypeVar("V")
ID_CACHE_LIMIT = 1 << 18  # ids kept per kind: ~40 MB at most


@dataclass(frozen=True)
class WindowTables:
    samples: pa.Table
    stacks: pa.Table
    frames: pa.Table


def parquet_bytes(table: pa.Table, metadata: dict[bytes, bytes] | None = None) -> bytes:
    """The table as one zstd Parquet file (strings dictionary-encoded)."""
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", use_dictionary=True)
    return sink.getvalue()


class IdCache:
    """Content ids already computed: a fleet sends the same frames and stacks in every
    window, and hashing them again was most of an append's Python time. Bounded: when
    full it starts over. Safe across threads (a lost race computes an id twice).

    A frame is first looked up by identity (the pprof reader hands out the same Frame
    object for the same frame, push after push): hashing a Frame's eight fields cost
    ~1 us, a fifth of a fleet window's table building."""

    def __init__(self, limit: int = ID_CACHE_LIMIT) -> None:
        self.limit = limit
        self.frames: dict[Frame, int] = {}
        self.held: dict[int, tuple[Frame, int]] = {}  # id(frame): the frame (kept alive), id
        self.stacks: dict[tuple[int, ...], int] = {}

    def frame(self, frame: Frame) -> int:
        held = self.held.get(id(frame))
        if held is not None and held[0] is frame:
            return held[1]
        found = self.frames.get(frame)
        if found is None:
            found = self._keep(self.frames, frame, frame_id(frame))
        self._keep(self.held, id(frame), (frame, found))
        return found

    def stack(self, ids: tuple[int, ...]) -> int:
        found = self.stacks.get(ids)
        if found is None:
            found = self._keep(self.stacks, ids, stack_id(ids))
        return found

    def _keep(self, table: dict, key: object, value: V) -> V:
        if len(table) >= self.limit:
            table.clear()
        table[key] = value
        return value


IDS = IdCache()


@dataclass(frozen=True)
class WindowColumns:
    """A window's three tables as columns of Python values, by column name. The head's
    log keeps these and makes Arrow tables of many windows at once: making them for
    every push cost more than decoding it (0.35 of ~0.6 CPU-ms a fleet window)."""

    samples: dict[str, list]
    stacks: dict[str, list]
    frames: dict[str, list]

    @property
    def rows(self) -> int:
        return len(self.samples["stack_id"])

    @property
    def samples_total(self) -> int:
        return sum(self.samples["samples"])


SCHEMAS = {"samples": SAMPLES_SCHEMA, "stacks": STACKS_SCHEMA, "frames": FRAMES_SCHEMA}


def table_of(columns: Sequence[WindowColumns], kind: str) -> pa.Table:
    """The `kind` table ("samples", "stacks" or "frames") of all the windows' rows."""
    schema = SCHEMAS[kind]
    parts = [getattr(c, kind) for c in columns]
    if len(parts) == 1:
        return pa.table(parts[0], schema=schema)
    return pa.table(
        {name: list(chain.from_iterable(p[name] for p in parts)) for name in schema.names},
        schema=schema,
    )


def distinct_of(columns: Sequence[WindowColumns], kind: str) -> pa.Table:
    """The "stacks" or "frames" table of the windows' rows, the first row of each id (its
    first column): a fleet sends the same stacks every window, and making Arrow values
    of every copy cost more than the copies' Python rows (~0.6 CPU-ms a fleet window)."""
    schema = SCHEMAS[kind]
    seen: set[int] = set()
    picked: dict[str, list] = {name: [] for name in schema.names}
    for part in (getattr(c, kind) for c in columns):
        for i, key in enumerate(part[schema.names[0]]):
            if key not in seen:
                seen.add(key)
                for name, values in picked.items():
                    values.append(part[name][i])
    return pa.table(picked, schema=schema)


def tables_of(columns: Sequence[WindowColumns]) -> WindowTables:
    return WindowTables(*(table_of(columns, kind) for kind in SCHEMAS))


def window_tables(window: Window) -> WindowTables:
    return tables_of([window_columns(window)])


def window_columns(window: Window) -> WindowColumns:
    """One samples row per (pid, comm, stack) of the window; its stacks and frames."""
    profile = window.profile
    frame_ids = [IDS.frame(f) for f in profile.frames]
    stack_frame_ids = [tuple(map(frame_ids.__getitem__, s)) for s in profile.stacks]
    stack_ids = [IDS.stack(ids) for ids in stack_frame_ids]
    threads = [(t.pid, t.name) for t in profile.threads]
    rows: dict[tuple[int, str, int], list[int]] = {}
    for sid, weight, count, thread, _state in profile.columns():
        pid, comm = threads[thread] if thread >= 0 else (0, "")
        row = rows.setdefault((pid, comm, sid), [0, 0])
        row[0] += count
        row[1] += round(window.cpu_ns(weight, count))
    used = {sid for _, _, sid in rows}
    stacks = sorted(used)
    return WindowColumns(
        samples=_samples(window, rows, stack_ids),
        stacks={
            "stack_id": [stack_ids[s] for s in stacks],
            "frame_ids": [list(stack_frame_ids[s]) for s in stacks],
        },
        frames=_frames(window, frame_ids, used),
    )


def _samples(
    window: Window, rows: dict[tuple[int, str, int], list[int]], stack_ids: list[int]
) -> dict[str, list]:
    fixed = {name: window.labels.get(name, "") for name in LABELS}
    default_pid = int(fixed["pid"]) if str(fixed["pid"]).isdigit() else 0
    extra = json.dumps({k: v for k, v in window.labels.items() if k not in LABELS}, sort_keys=True)
    keys = sorted(rows)
    processes = [window.processes.get(pid) for pid, _, _ in keys]
    n = len(keys)

    def of_process(name: str) -> list[str]:
        return [(getattr(p, name) if p else "") or fixed[name] for p in processes]

    return {
        "time": [int(window.start * 1000)] * n,
        "host": [fixed["host"]] * n,
        "service": [fixed["service"]] * n,
        "pid": [pid or default_pid for pid, _, _ in keys],
        "comm": [comm or fixed["comm"] for _, comm, _ in keys],
        "exe": of_process("exe"),
        "build_id": of_process("build_id"),
        "cgroup": of_process("cgroup"),
        "labels": [extra] * n,
        "stack_id": [stack_ids[sid] for _, _, sid in keys],
        "samples": [rows[k][0] for k in keys],
        "cpu_ns": [rows[k][1] for k in keys],
        "type": [window.type] * n,
        "unit": [window.unit] * n,
    }


def _frames(window: Window, frame_ids: list[int], used_stacks: set[int]) -> dict[str, list]:
    profile = window.profile
    used = sorted({f for s in used_stacks for f in profile.stacks[s]})
    frames = [profile.frames[f] for f in used]
    return {
        "frame_id": [frame_ids[f] for f in used],
        "function": [f.function for f in frames],
        "dso": [f.dso for f in frames],
        "file": [f.file for f in frames],
        "line": [f.line for f in frames],
        "inlined": [f.inlined for f in frames],
        "kernel": [f.kernel for f in frames],
        "build_id": [f.build_id or None for f in frames],
        "address": [f.address if f.build_id else None for f in frames],
    }
