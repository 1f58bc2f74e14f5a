"""The fleet store's layout: folders, file names, Parquet schemas, content ids.

    _fleet.json                                    layout version
    samples/level=raw/dt=YYYY-MM-DD/hour=HH/       one file per window (w-<id>.parquet),
                                                   or compacted (c-<generation>.parquet),
                                                   or a head's flush (h-<segment>.parquet)
    samples/level=minute|hour/dt=../hour=../       rollups (r-<generation of their c- file>.parquet)
    stacks/dt=YYYY-MM-DD/                          stack_id -> frame ids (leaf first)
    frames/dt=YYYY-MM-DD/                          frame_id -> function, dso, file, line, ...
    windows/dt=YYYY-MM-DD/hour=HH/_batch-<seq>.json  the markers of a head flush's windows
                                                   (batches.py)
    windows/dt=YYYY-MM-DD/hour=HH/<window id>      the marker of a window appended alone (JSON)
    hosts/<hash>.json                              the last status each host reported
    _maintenance.lease                             who compacts or expires now (lease.py)
    head/<stamp>-<pid>.wal                         the collectors' write-ahead logs (head.py;
                                                   an S3 store's are on the collector's disk)

Times are UTC. Stacks and frames are content-addressed (a 64-bit hash of what they
hold), so a stack written by a thousand windows is the same row everywhere and
readers deduplicate dictionaries with DISTINCT. docs/fleet.md is the user's copy.
"""

from __future__ import annotations

import hashlib
import struct
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from ...model.fleet import LABELS
from ...model.profile import Frame

LAYOUT_VERSION = 1
LAYOUT_FILE = "_fleet.json"
LEVELS = ("raw", "minute", "hour")
BUCKET_S = {"minute": 60, "hour": 3600}
WINDOW_PREFIX = "w-"  # a raw file holding one window: w-<window id>.parquet
HEAD_PREFIX = "h-"  # a raw file of a head's flush: h-<segment>.parquet
COMPACTED_PREFIX = "c-"  # a raw file merging others: c-<generation>.parquet
ROLLUP_PREFIX = "r-"  # a rollup of the compacted file of the same stamp
# Parquet key-value metadata of a compacted file: the file names it replaces (JSON list).
REPLACES_KEY = b"perfsleuth.replaces"

# String labels are Parquet-dictionary-encoded; pid is a number (0 = unknown).
SAMPLES_SCHEMA = pa.schema(
    [
        ("time", pa.timestamp("ms")),
        *[(name, pa.int64() if name == "pid" else pa.string()) for name in LABELS],
        ("labels", pa.string()),  # the window's other labels, JSON with sorted keys
        ("stack_id", pa.int64()),
        ("samples", pa.int64()),
        # The value in the type's unit: CPU ns for "cpu" (the name says what it was first).
        ("cpu_ns", pa.int64()),
        # The profile type and its unit (model.fleet.PROFILE_TYPES); null in files
        # written before these columns, which hold CPU profiles only.
        ("type", pa.string()),
        ("unit", pa.string()),
    ]
)
STACKS_SCHEMA = pa.schema([("stack_id", pa.int64()), ("frame_ids", pa.list_(pa.int64()))])
FRAMES_SCHEMA = pa.schema(
    [
        ("frame_id", pa.int64()),
        ("function", pa.string()),
        ("dso", pa.string()),
        ("file", pa.string()),
        ("line", pa.int32()),
        ("inlined", pa.bool_()),
        ("kernel", pa.bool_()),
        # A frame without a symbol: its DSO's GNU build-id and its address in that ELF
        # (null otherwise, and in stores written before these columns).
        ("build_id", pa.string()),
        ("address", pa.int64()),
    ]
)
GROUP_COLUMNS = tuple(n for n in SAMPLES_SCHEMA.names if n not in ("samples", "cpu_ns"))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A table read from a file of an older layout version, with the columns it lacks
    as nulls, in the schema's order and types."""
    for name in schema.names:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(len(table), schema.field(name).type))
    return table.select(schema.names).cast(schema)


def _hash64(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def frame_id(frame: Frame) -> int:
    key = "\0".join(
        (frame.function, frame.dso, frame.file, str(frame.line), str(int(frame.inlined)))
    )
    key = f"{key}\0{int(frame.kernel)}"
    if frame.build_id:  # symbolized frames keep the ids they always had
        key = f"{key}\0{frame.build_id}\0{frame.address}"
    return _hash64(key.encode())


def stack_id(frame_ids: Sequence[int]) -> int:
    return _hash64(struct.pack(f"<{len(frame_ids)}q", *frame_ids))


def day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def hour_partition(t: float) -> str:
    """`dt=YYYY-MM-DD/hour=HH` of the hour holding unix time t."""
    moment = datetime.fromtimestamp(t, UTC)
    return f"dt={moment:%Y-%m-%d}/hour={moment:%H}"


def partition_start(partition: str) -> float:
    """Unix time where an hour partition (`dt=../hour=..`) or a day (`dt=..`) begins."""
    parts = dict(p.split("=", 1) for p in partition.split("/"))
    moment = datetime.strptime(parts["dt"], "%Y-%m-%d").replace(tzinfo=UTC)
    return (moment + timedelta(hours=int(parts.get("hour", 0)))).timestamp()


def hour_partitions(start: float, end: float) -> list[str]:
    """The hour partitions that [start, end) touches, oldest first."""
    t = start // 3600 * 3600
    partitions = []
    while t < end:
        partitions.append(hour_partition(t))
        t += 3600
    return partitions


def samples_dir(level: str, partition: str) -> str:
    return f"samples/level={level}/{partition}"


def window_file(window_id: str) -> str:
    return f"{WINDOW_PREFIX}{window_id}.parquet"


def marker(partition: str, window_id: str) -> str:
    return f"windows/{partition}/{window_id}"


def compacted_name(generation: int) -> str:
    """The name of a partition's `generation`th compacted file (20 digits: stores written
    before generations named them by a nanosecond stamp, which sorts the same way)."""
    return f"{COMPACTED_PREFIX}{generation:020d}.parquet"


def generation(name: str) -> int:
    """The generation of a compacted file's name (its first 20 digits)."""
    digits = name[len(COMPACTED_PREFIX) : len(COMPACTED_PREFIX) + 20]
    return int(digits) if digits.isdigit() else 0


def stamp() -> str:
    """A file stamp that sorts by creation time and never repeats."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
