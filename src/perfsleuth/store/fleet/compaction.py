"""Compaction: each hour partition's raw files merged into one, rollups written,
and each day's stacks and frames deduplicated.

Never a double count, whatever runs at once and whatever is killed: the merged file
(c-<generation>.parquet, one more than the newest generation listed) names every file
the partition held in its Parquet metadata, is created only if no file has its name (a
conditional PUT on S3, a hard link on a folder; two compactions of the same state race
for the same name and one loses), and is written before anything is deleted; readers
count the newest generation and the files it does not name (reading.py). Rollups carry
their compacted file's generation and are read only while that file is the partition's
only live raw file. Window markers of merged windows are written before their raw files
go, so deduplication survives compaction. A run holds the store's maintenance lease
(lease.py), so a second one started meanwhile says so and leaves, and one killed with
-9 frees it at once on its own host, or TTL_S later from another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import UserError
from .filesystem import Files
from .layout import (
    COMPACTED_PREFIX,
    HEAD_PREFIX,
    REPLACES_KEY,
    ROLLUP_PREFIX,
    SAMPLES_SCHEMA,
    WINDOW_PREFIX,
    compacted_name,
    conform,
    generation,
    marker,
    samples_dir,
    stamp,
)
from .lease import Lease
from .reading import live_raw, newest_compacted, partitions, replaced_by, rollup_name
from .rollups import rollup, sort_samples
from .writer import parquet_bytes


@dataclass
class Compacted:
    partitions: int = 0  # hour partitions rewritten
    files_before: int = 0
    files_after: int = 0


def compact(files: Files, where: str) -> Compacted:
    """Compact every partition that has more than one live raw file or stale rollups.

    Raises UserError when another run holds the lease, or the store changed under this
    one in a way a lease-holder never sees (a file gone): run it again."""
    result = Compacted()
    with Lease(files, "compaction", where) as lease:
        try:
            for partition in partitions(files, 0.0, float("inf")):
                lease.check()
                _compact_partition(files, partition, result)
            for table, key in (("stacks", "stack_id"), ("frames", "frame_id")):
                for dt in files.names(table, dirs=True):
                    lease.check()
                    _deduplicate(files, f"{table}/{dt}", key, result)
        except FileNotFoundError:
            raise UserError(
                f"a file of {where} went away during the compaction (another compaction or"
                " retention run without the lease?); nothing is lost: run it again"
            ) from None
    return result


def _compact_partition(files: Files, partition: str, result: Compacted) -> None:
    raw = samples_dir("raw", partition)
    present = [n for n in files.names(raw) if n.endswith(".parquet")]
    live = live_raw(files, partition, present)
    result.files_before += len(present)
    if rollup_name(live) is None:
        merged = _merge(files, partition, live, present)
        if merged is None:
            return  # another compaction wrote this generation: it finishes the partition
        live = [merged]
        result.partitions += 1
    # In listing order: a reader whose listing (S3 pages it, 1,000 keys a page) missed a
    # file deleted here mostly finds the older files its first page named gone too when
    # it reads them, and selects again.
    for name in present:
        if name not in live:
            files.delete(f"{raw}/{name}")
    result.files_after += len(live)
    _write_rollups(files, partition, live[0])


def _merge(files: Files, partition: str, live: list[str], present: list[str]) -> str | None:
    """Write the live raw files of `partition` as its next generation's c- file, naming
    every file `present`; its name, or None when that name was taken meanwhile."""
    raw = samples_dir("raw", partition)
    for name in live:
        if name.startswith(WINDOW_PREFIX):
            window_id = name[len(WINDOW_PREFIX) : -len(".parquet")]
            if not files.exists(marker(partition, window_id)):
                files.put(marker(partition, window_id), b"{}")
    table = pa.concat_tables([conform(_read(files, f"{raw}/{n}"), SAMPLES_SCHEMA) for n in live])
    newest = newest_compacted(present)
    name = compacted_name(generation(newest) + 1 if newest else 1)
    # A head flush's file stays named in every later generation: a reader tells by it
    # that the log's copy of those windows, if still there, is not to be counted.
    flushed = (
        [n for n in replaced_by(files, f"{raw}/{newest}") if n.startswith(HEAD_PREFIX)]
        if newest
        else []
    )
    replaces = sorted({*present, *flushed})
    data = parquet_bytes(sort_samples(table), {REPLACES_KEY: json.dumps(replaces).encode()})
    return name if files.create(f"{raw}/{name}", data) is not None else None


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
