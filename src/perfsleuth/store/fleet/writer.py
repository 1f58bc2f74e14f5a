"""A window as the fleet store's three tables: samples, stacks and frames."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import UserError
from ...model.fleet import LABELS, Window
from .layout import FRAMES_SCHEMA, SAMPLES_SCHEMA, STACKS_SCHEMA, frame_id, stack_id


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
    return window_record(window)[0]


def window_record(window: Window) -> tuple[WindowColumns, bytes]:
    """One samples row per (pid, comm, stack) of the window, its stacks and frames; and
    the three as the JSON text the head's log keeps (`"samples":{...},"stacks":{...},
    "frames":{...}`, wal.encode). Made natively: native/src/columns.rs says why."""
    profile = window.profile
    fixed = {name: window.labels.get(name, "") for name in LABELS}
    default_pid = int(fixed["pid"]) if str(fixed["pid"]).isdigit() else 0
    extra = json.dumps({k: v for k, v in window.labels.items() if k not in LABELS}, sort_keys=True)
    samples, stacks, frames, tables = _native_columns()(
        profile.frames,
        profile.stacks,
        (profile.sample_stack, profile.sample_weight, profile.sample_count, profile.sample_thread),
        [(t.pid, t.name) for t in profile.threads],
        {pid: (p.exe, p.build_id, p.cgroup) for pid, p in window.processes.items()},
        (
            int(window.start * 1000),
            *(fixed[name] for name in ("host", "service")),
            default_pid,
            *(fixed[name] for name in ("comm", "exe", "build_id", "cgroup")),
            extra,
            window.type,
            window.unit,
        ),
        window.rate_hz,
        (frame_id, stack_id),
    )
    return WindowColumns(samples, stacks, frames), tables


def _native_columns() -> Callable[..., tuple[dict, dict, dict, bytes]]:
    """perfsleuth_native.window_columns; a UserError when the extension is not built or
    older than this code."""
    try:
        import perfsleuth_native
    except ImportError:
        perfsleuth_native = None
    found = getattr(perfsleuth_native, "window_columns", None)
    if found is None:
        raise UserError(
            "the fleet store writes windows with perfsleuth's native extension, which is "
            "not installed or older than this perfsleuth; run `make native` (it needs cargo)"
        )
    return found
