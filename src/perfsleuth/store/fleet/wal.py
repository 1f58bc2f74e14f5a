"""The head's write-ahead log: segment files of window records, and their reader.

A record is one window's marker and its rows of the store's three tables (samples,
stacks, frames) as columns, one JSON document, framed by its length and CRC-32, so a
record a crash cut short ends the segment: it was never acknowledged. Records of the
first format (MAGIC_V1: the marker as JSON, each table an Arrow IPC stream) are read
too, from segments an older collector left. Segments are local files
(`<head folder>/<stamp>-<pid>.wal`), held with an flock by the collector that writes
them; one no process holds is an orphan, flushed by the next collector that starts.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa

# zlib's CRC-32 (the same values), 13x as fast: 5 against 66 us for a fleet window's 40 KB
# record, which the collector's worker computes for every push
from isal.isal_zlib import crc32

from .layout import hour_partition
from .writer import WindowColumns, WindowTables, tables_of

MAGIC = b"PSW2"
MAGIC_V1 = b"PSW1"
FRAME = struct.Struct("<4sII")  # magic, payload length, CRC-32 of the payload
SIZES = struct.Struct("<IIII")  # MAGIC_V1: JSON, samples, stacks, frames lengths
TABLES = ("samples", "stacks", "frames")
SUFFIX = ".wal"


@dataclass(frozen=True)
class Record:
    marker: dict  # the window's marker: id, host, service, start, end, samples, ...
    columns: WindowColumns

    @property
    def window_id(self) -> str:
        return str(self.marker["id"])

    @functools.cached_property
    def partition(self) -> str:  # asked for by every flush and query that counts it
        return hour_partition(float(self.marker["start"]))

    @functools.cached_property
    def tables(self) -> WindowTables:
        return tables_of([self.columns])


def encode(marker: dict, tables: bytes) -> bytes:
    """A record of the window `marker` names and its tables' JSON (writer.window_record's:
    `"samples":{...},"stacks":{...},"frames":{...}`)."""
    payload = b'{"marker":' + orjson.dumps(marker) + b"," + tables + b"}"
    return FRAME.pack(MAGIC, len(payload), crc32(payload)) + payload


def decode_all(data: bytes) -> list[Record]:
    """The whole records of a segment's bytes, up to the first torn or corrupt one."""
    return decode_prefix(data)[0]


def decode_prefix(data: bytes) -> tuple[list[Record], int]:
    """The whole records at the start of `data`, and the length they take."""
    records = []
    at = 0
    while at + FRAME.size <= len(data):
        magic, length, crc = FRAME.unpack_from(data, at)
        payload = data[at + FRAME.size : at + FRAME.size + length]
        if magic not in (MAGIC, MAGIC_V1) or len(payload) != length:
            break
        if crc32(payload) != crc:
            break
        records.append(_record(payload) if magic == MAGIC else _record_v1(payload))
        at += FRAME.size + length
    return records, at


def _record(payload: bytes) -> Record:
    document = orjson.loads(payload)
    return Record(document["marker"], WindowColumns(*(document[t] for t in TABLES)))


def _record_v1(payload: bytes) -> Record:
    sizes = SIZES.unpack_from(payload)
    at = SIZES.size
    parts = []
    for size in sizes:
        parts.append(payload[at : at + size])
        at += size
    marker = json.loads(parts[0])
    samples, stacks, frames = (pa.ipc.open_stream(p).read_all() for p in parts[1:])
    at = samples.schema.get_field_index("time")  # as the columns hold it: ms, an int
    samples = samples.set_column(at, "time", samples.column(at).cast(pa.int64()))
    return Record(marker, WindowColumns(*(t.to_pydict() for t in (samples, stacks, frames))))


class Segment:
    """A segment this process appends to: written under a lock, made durable by
    `sync`, which lets the appends that meet share one fsync."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # ours until closed, or our process dies
        self.written = 0
        self.synced = 0
        self._sync_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.path.name[: -len(SUFFIX)]

    def write(self, data: bytes) -> int:
        """Append `data` (the caller holds the head's lock); the offset `sync` waits for."""
        os.write(self.fd, data)
        self.written += len(data)
        return self.written

    def sync(self, offset: int) -> None:
        with self._sync_lock:
            if self.synced >= offset:
                return
            end = self.written
            os.fsync(self.fd)
            self.synced = end

    def close(self) -> None:
        self.sync(self.written)
        with self._sync_lock:
            os.close(self.fd)
            self.synced = 1 << 62  # an append that syncs after this finds it done


def segments(folder: Path) -> list[Path]:
    """The segment files of a head folder, oldest first."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX))
    except FileNotFoundError:
        return []


def read_segment(path: Path) -> list[Record]:
    """A segment's records; none when it was flushed and deleted meanwhile."""
    try:
        return decode_all(path.read_bytes())
    except FileNotFoundError:
        return []


class SegmentReader:
    """Segments as a querying process reads them again and again: each from where its
    last read stopped (a segment only grows, until it is flushed and deleted), so a
    query decodes only the windows logged since the one before."""

    def __init__(self) -> None:
        self._read: dict[Path, tuple[int, int, list[Record]]] = {}  # inode, offset, records
        self._lock = threading.Lock()

    def records(self, folder: Path) -> list[tuple[Path, list[Record]]]:
        """Each segment of `folder`, oldest first, with its whole records."""
        found = [(path, self._records(path)) for path in segments(folder)]
        with self._lock:
            listed = {path for path, _ in found}
            for path in [p for p in self._read if p.parent == folder and p not in listed]:
                del self._read[path]
        return found

    def _records(self, path: Path) -> list[Record]:
        try:
            with open(path, "rb") as f:
                inode = os.fstat(f.fileno()).st_ino
                with self._lock:
                    known, offset, records = self._read.get(path, (inode, 0, []))
                if known != inode:
                    offset, records = 0, []
                f.seek(offset)
                new, used = decode_prefix(f.read())
        except FileNotFoundError:  # flushed and deleted meanwhile
            return []
        records = records + new
        with self._lock:
            self._read[path] = (inode, offset + used, records)
        return records


def claim_orphan(path: Path) -> int | None:
    """An open descriptor holding `path`'s flock when no live process holds it (the
    collector that wrote it died), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if not path.exists():  # flushed and deleted by its owner after we opened it
        os.close(fd)
        return None
    return fd


def logged_markers(folder: Path) -> list[dict]:
    """The markers of the windows in a head folder's segments, once each."""
    found: dict[str, dict] = {}
    for path in segments(folder):
        for record in read_segment(path):
            found.setdefault(record.window_id, record.marker)
    return list(found.values())
