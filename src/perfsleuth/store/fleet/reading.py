"""Which files a reader reads: live raw files, valid rollups, the dictionaries of a range.

Compaction writes a merged file (c-<generation>.parquet) whose Parquet metadata names
every file the partition held when it was listed, and deletes them only afterwards. The
newest generation holds the samples of every older one, so a reader lists a partition,
reads the footer of its newest c- file and skips the older c- files and every file it
names: it counts each sample once whether it lists before, during or after a compaction
(or after one that crashed before deleting, or one whose lease lapsed and that wrote a
late, older generation).

The head's log (head.py) holds the windows a collector acknowledged and has not yet
flushed. A reader reads its segments first, then lists the partitions: a segment's
windows of a partition are counted from the log unless the partition's listing holds
the segment's h- file (or the newest c- file names it), so a flush between the two
is seen once.
"""

from __future__ import annotations

import json
import operator
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .filesystem import Files
from .layout import (
    COMPACTED_PREFIX,
    HEAD_PREFIX,
    REPLACES_KEY,
    ROLLUP_PREFIX,
    generation,
    partition_start,
    samples_dir,
)
from .wal import SUFFIX, Record, SegmentReader
from .writer import distinct_of, table_of

LOG = SegmentReader()  # the head's log as this process read it last


@dataclass(frozen=True)
class Selection:
    """The Parquet files holding the samples of a time range, and their dictionaries."""

    fs: pafs.FileSystem
    samples: list[str]  # paths in fs
    stacks: list[str]
    frames: list[str]
    levels: dict[str, int]  # level -> partitions read at that level
    head: Head = field(default_factory=lambda: Head([]))  # the log's windows not yet flushed

    @property
    def empty(self) -> bool:
        return not self.samples and not self.head.samples.num_rows


@dataclass(frozen=True)
class Head:
    """The rows of the head's windows a selection counts from the log."""

    records: list[Record]

    @property
    def samples(self) -> pa.Table:
        return BUILT.table(self.records, "samples")

    @property
    def stacks(self) -> pa.Table:
        return BUILT.table(self.records, "stacks")

    @property
    def frames(self) -> pa.Table:
        return BUILT.table(self.records, "frames")


class _Built:
    """The log's tables last made, per kind, and the records they hold: a process that
    queries again and again (`serve`, the bench) makes only the rows of the windows
    logged since (remaking them all took ~17 ms a query for 300 windows). A table of
    stacks or frames holds each once per part made, not once in all."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[list[Record], pa.Table]] = {}
        self._lock = threading.Lock()

    def table(self, records: list[Record], kind: str) -> pa.Table:
        with self._lock:
            made, table = self._made.get(kind, ([], None))
        n = len(made)
        if table is not None and n <= len(records) and all(map(operator.is_, made, records)):
            if n == len(records):
                return table
            table = pa.concat_tables([table, _make(records[n:], kind)])
        else:
            table = _make(records, kind)
        with self._lock:
            self._made[kind] = (list(records), table)
        return table


def _make(records: list[Record], kind: str) -> pa.Table:
    columns = [r.columns for r in records]
    return table_of(columns, kind) if kind == "samples" else distinct_of(columns, kind)


BUILT = _Built()


def replaced_by(files: Files, rel: str) -> list[str]:
    """The file names a compacted file replaces."""
    metadata = pq.read_schema(files.path(rel), filesystem=files.fs).metadata or {}
    return json.loads(metadata.get(REPLACES_KEY, b"[]"))


def newest_compacted(names: list[str]) -> str | None:
    compacted = [n for n in names if n.startswith(COMPACTED_PREFIX)]
    return max(compacted, key=lambda n: (generation(n), n)) if compacted else None


def live_raw(files: Files, partition: str, names: list[str] | None = None) -> list[str]:
    """Names of the raw files of a partition that hold its samples, each sample once
    (`names`: the partition's files, when already listed)."""
    return _raw(files, partition, names)[0]


def _raw(
    files: Files, partition: str, names: list[str] | None = None
) -> tuple[list[str], set[str]]:
    """The live raw files of a partition, and the names its newest c- file replaces."""
    folder = samples_dir("raw", partition)
    if names is None:
        names = [n for n in files.names(folder) if n.endswith(".parquet")]
    newest = newest_compacted(names)
    if newest is None:
        return names, set()
    replaced = set(replaced_by(files, f"{folder}/{newest}"))
    live = [
        n for n in names if n == newest or not (n in replaced or n.startswith(COMPACTED_PREFIX))
    ]
    return live, replaced


def rollup_name(live: list[str]) -> str | None:
    """The rollup file name valid for these live raw files: only one compacted file has one."""
    if len(live) == 1 and live[0].startswith(COMPACTED_PREFIX):
        return ROLLUP_PREFIX + live[0][len(COMPACTED_PREFIX) :]
    return None


def partitions(files: Files, start: float, end: float) -> list[str]:
    """Existing raw hour partitions (`dt=../hour=..`) overlapping [start, end)."""
    found = []
    for dt in files.names("samples/level=raw", dirs=True):
        day_start = partition_start(dt)
        if day_start >= end or day_start + 86400 <= start:
            continue
        for hour in files.names(f"samples/level=raw/{dt}", dirs=True):
            p = f"{dt}/{hour}"
            if partition_start(p) < end and partition_start(p) + 3600 > start:
                found.append(p)
    return found


def _level(
    files: Files, partition: str, live: list[str], start: float, end: float, grain: float
) -> str:
    """The coarsest level whose rows, filtered by time in [start, end) and grouped in
    buckets of `grain` seconds from the epoch, equal the raw rows'."""
    rollup = rollup_name(live)
    if rollup is None:
        return "raw"
    p_start = partition_start(partition)
    whole = start <= p_start and p_start + 3600 <= end
    if whole and grain % 3600 == 0 and files.exists(f"{samples_dir('hour', partition)}/{rollup}"):
        return "hour"
    minute_aligned = start % 60 == 0 and end % 60 == 0
    if (
        (whole or minute_aligned)
        and grain % 60 == 0
        and files.exists(f"{samples_dir('minute', partition)}/{rollup}")
    ):
        return "minute"
    return "raw"


def select(
    files: Files, start: float, end: float, grain: float = 3600, head: Path | None = None
) -> Selection:
    """The files to read for samples whose time is in [start, end), summed in buckets of
    `grain` seconds (a whole hour reads the hour rollup, a whole minute the minute one),
    and the windows of the log in `head` not yet in them."""
    logged = _logged(head, start, end) if head is not None else []
    samples: list[str] = []
    levels: dict[str, int] = {}
    days: set[str] = set()
    flushed: set[tuple[str, str]] = set()  # (partition, batch) in the partition's files
    for partition in partitions(files, start, end):
        live, replaced = _raw(files, partition)
        flushed |= {(partition, n) for n in (*live, *replaced) if n.startswith(HEAD_PREFIX)}
        if not live:
            continue
        level = _level(files, partition, live, start, end, grain)
        levels[level] = levels.get(level, 0) + 1
        names = live if level == "raw" else [rollup_name(live) or ""]
        samples += [files.path(f"{samples_dir(level, partition)}/{n}") for n in names]
        days.add(partition.split("/")[0])
    return Selection(
        fs=files.fs,
        samples=samples,
        stacks=_dictionary(files, "stacks", days),
        frames=_dictionary(files, "frames", days),
        levels=levels,
        head=Head(
            [
                r
                for batch, r in logged
                if (r.partition, f"{HEAD_PREFIX}{batch}.parquet") not in flushed
            ]
        ),
    )


def _logged(head: Path, start: float, end: float) -> list[tuple[str, Record]]:
    """(batch, record) of each window of the log started in [start, end), once each."""
    seen: set[str] = set()
    found = []
    for path, records in LOG.records(head):
        for record in records:
            t = float(record.marker["start"])
            if start <= t < end and record.window_id not in seen:
                seen.add(record.window_id)
                found.append((path.name[: -len(SUFFIX)], record))
    return found


def _dictionary(files: Files, table: str, days: set[str]) -> list[str]:
    return [
        files.path(f"{table}/{dt}/{n}")
        for dt in sorted(days)
        for n in files.names(f"{table}/{dt}")
        if n.endswith(".parquet")
    ]
