"""Compaction: each hour partition's raw files merged into one, rollups written,
and each day's stacks and frames deduplicated.

Never a double count: the merged file (c-<stamp>.parquet) names the files it replaces
in its Parquet metadata and is written before they are deleted; readers skip replaced
files (reading.py). Rollups carry their compacted file's stamp and are read only while
that file is the partition's only live raw file. Window markers of merged windows are
written before their raw files go, so deduplication survives compaction. Run one
compaction at a time per store (a local store holds a lock file to make sure).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import UserError
from .filesystem import Files
from .layout import (
    COMPACTED_PREFIX,
    REPLACES_KEY,
    ROLLUP_PREFIX,
    SAMPLES_SCHEMA,
    WINDOW_PREFIX,
    conform,
    marker,
    samples_dir,
    stamp,
)
from .reading import live_raw, partitions, rollup_name
from .rollups import rollup, sort_samples
from .writer import parquet_bytes

LOCK_FILE = "_compaction.lock"
STALE_LOCK_S = 3600.0


@dataclass
class Compacted:
    partitions: int = 0  # hour partitions rewritten
    files_before: int = 0
    files_after: int = 0


def compact(files: Files) -> Compacted:
    """Compact every partition that has more than one live raw file or stale rollups."""
    result = Compacted()
    with _lock(files):
        for partition in partitions(files, 0.0, float("inf")):
            _compact_partition(files, partition, result)
        for table, key in (("stacks", "stack_id"), ("frames", "frame_id")):
            for dt in files.names(table, dirs=True):
                _deduplicate(files, f"{table}/{dt}", key, result)
    return result


def _compact_partition(files: Files, partition: str, result: Compacted) -> None:
    raw = samples_dir("raw", partition)
    present = [n for n in files.names(raw) if n.endswith(".parquet")]
    live = live_raw(files, partition)
    result.files_before += len(present)
    if rollup_name(live) is None:
        merged = _merge(files, partition, live)
        live = [merged]
        result.partitions += 1
    for name in present:
        if name not in live:
            files.delete(f"{raw}/{name}")
    result.files_after += len(live)
    _write_rollups(files, partition, live[0])


def _merge(files: Files, partition: str, live: list[str]) -> str:
    """Write the live raw files of `partition` as one c- file; its name."""
    raw = samples_dir("raw", partition)
    for name in live:
        if name.startswith(WINDOW_PREFIX):
            window_id = name[len(WINDOW_PREFIX) : -len(".parquet")]
            if not files.exists(marker(partition, window_id)):
                files.put(marker(partition, window_id), b"{}")
    table = pa.concat_tables([conform(_read(files, f"{raw}/{n}"), SAMPLES_SCHEMA) for n in live])
    name = f"{COMPACTED_PREFIX}{stamp()}.parquet"
    data = parquet_bytes(sort_samples(table), {REPLACES_KEY: json.dumps(live).encode()})
    files.put(f"{raw}/{name}", data)
    return name


def _write_rollups(files: Files, partition: str, compacted: str) -> None:
    wanted = rollup_name([compacted])
    assert wanted is not None
    table = None
    for level in ("minute", "hour"):
        folder = samples_dir(level, partition)
        if not files.exists(f"{folder}/{wanted}"):
            if table is None:
                table = _read(files, f"{samples_dir('raw', partition)}/{compacted}")
            table = rollup(table, level)  # the hour rollup sums the minute rollup
            files.put(f"{folder}/{wanted}", parquet_bytes(table))
        for name in files.names(folder):
            if name.startswith(ROLLUP_PREFIX) and name != wanted:
                files.delete(f"{folder}/{name}")


def _deduplicate(files: Files, folder: str, key: str, result: Compacted) -> None:
    """One file of distinct rows for a day's dictionary (ids are content hashes)."""
    names = [n for n in files.names(folder) if n.endswith(".parquet")]
    result.files_before += len(names)
    result.files_after += min(len(names), 1)
    if len(names) < 2:
        return
    tables = [_read(files, f"{folder}/{n}") for n in names]  # old frames lack build_id, address
    table = pa.concat_tables(tables, promote_options="default").sort_by(key)
    ids = table.column(key)
    changed = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1))
    distinct = table.filter(pa.concat_arrays([pa.array([True]), *changed.chunks]))
    files.put(f"{folder}/{COMPACTED_PREFIX}{stamp()}.parquet", parquet_bytes(distinct))
    for name in names:
        files.delete(f"{folder}/{name}")


def _read(files: Files, rel: str) -> pa.Table:
    return pq.read_table(files.path(rel), filesystem=files.fs).replace_schema_metadata(None)


@contextmanager
def _lock(files: Files) -> Iterator[None]:
    """Keep a second compaction of a local store out (S3 has no exclusive create)."""
    if not files.local:
        yield
        return
    path = files.path(LOCK_FILE)
    os.makedirs(files.base, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if time.time() - os.path.getmtime(path) < STALE_LOCK_S:
            raise UserError(
                f"another compaction of {files.base} is running ({path}); wait for it,"
                " or delete that file if none is"
            ) from None
        os.replace(path, f"{path}.stale")  # a crashed compactor's: take over
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.close(fd)
    try:
        yield
    finally:
        os.unlink(path)
