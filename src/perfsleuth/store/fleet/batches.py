"""Which windows an hour partition holds: one marker per head flush, and the old ones.

A head's flush claims its windows of a partition with one file,
`windows/<partition>/_batch-<seq>.json` ({"batch": its name, "windows": [each window's
marker]}), where seq counts 1, 2, ... in each partition. A name is created only if
absent, and only by a flush that has read every batch before it: a window held by any
of them, or by a marker of its own (`windows/<partition>/<window id>`: the store's own
appends, and every flush of a collector before batches), is left out of the new one.
Two flushes racing for a seq both try it; the loser reads the winner's and tries the
next. So each window belongs to exactly one batch or marker, first come first stored;
a flush that is retried (the segment of a collector that died) finds its own batch
and keeps what it claimed. Window ids start with a letter or digit: no id is a batch's
name.

One file per flush instead of one per window: creating a marker file was half of a
flush's CPU (~0.2 ms a fleet window, perf), and `fleet status` read them one by one.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time

import pyarrow.fs as pafs

from .filesystem import Files

BATCH_PREFIX = "_batch-"
BATCH_SUFFIX = ".json"
BATCH_NAME = re.compile(r"_batch-(\d+)\.json")
# How long an S3 partition's listing is trusted by the duplicate check of a push (a
# folder's is checked by its modification time at every push).
LISTING_S = 1.0
# Window ids of the batches a process keeps read (~80 bytes each), and partitions whose
# windows it keeps listed (a push looks up its own hour, mostly); past either it starts
# over, reading again what it needs.
IDS_LIMIT = 1 << 20
# A folder's modification time is as coarse as the kernel's clock tick: a listing made
# this soon after a change is not kept (a batch created in the same tick would not
# change the time again).
SETTLED_NS = 50_000_000
PARTITIONS_LIMIT = 8
# A batch file as listed: its name, modification time and size. Retention deletes whole
# partitions, so a name may come back, as another file: the time tells them apart.
Listed = tuple[str, int, int]


def batch_file(seq: int) -> str:
    return f"{BATCH_PREFIX}{seq:010d}{BATCH_SUFFIX}"


def is_batch(name: str) -> bool:
    return name.startswith(BATCH_PREFIX) and name.endswith(BATCH_SUFFIX)


def _seq(name: str) -> int | None:
    match = BATCH_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def folder(partition: str) -> str:
    return f"windows/{partition}"


class Batches:
    """The batch markers of a store as one process reads and writes them: each batch's
    window ids read once (a batch never changes), each partition's listing kept until it
    changes."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self._read: dict[tuple[str, Listed], tuple[str, list[str]]] = {}  # batch, its ids
        self._ids_read = 0
        self._listed: dict[str, tuple[float, dict[str, str]]] = {}  # partition: stamp, held
        self._lock = threading.Lock()

    def markers(self, partition: str) -> dict[str, dict]:
        """{window id: its marker} of every window the partition holds, batches and the
        markers of their own (those first)."""
        found: dict[str, dict] = {}
        own, batches = self._list(partition)
        for name in own:
            found[name] = json.loads(self.files.get(f"{folder(partition)}/{name}") or b"{}")
        for name, _, _ in batches:
            for info in self._doc(partition, name)["windows"]:
                found.setdefault(info["id"], info)
        return found

    def stored(self, partition: str, window_id: str) -> bool:
        """Whether a batch or a marker of its own holds the window (a batch another
        process created may be seen up to LISTING_S late on S3)."""
        if self.files.exists(f"{folder(partition)}/{window_id}"):
            return True
        return window_id in self._held(partition)

    def claim(self, partition: str, batch: str, markers: list[dict], group: int) -> set[str]:
        """The ids of `markers` (windows of `partition`) that batch `batch` holds: those no
        other batch or marker held, now claimed in a new batch file (durable only after
        the next `files.sync()`), and those an earlier try of this batch claimed."""
        while True:
            own, batches = self._list(partition)
            held = self._owners(partition, batches)
            mine, new = set(), []
            for info in markers:
                owner = held.get(info["id"])
                if owner is None and info["id"] in own:
                    owner = self._marker_batch(partition, info["id"])
                if owner == batch:
                    mine.add(info["id"])
                elif owner is None:
                    new.append({**info, "group": group})
            if not new:
                return mine
            name = batch_file((_seq(batches[-1][0]) or 0) + 1 if batches else 1)
            data = json.dumps({"batch": batch, "windows": new}).encode()
            if self.files.create(f"{folder(partition)}/{name}", data, durable=False) is not None:
                with self._lock:
                    self._listed.pop(partition, None)
                return mine | {info["id"] for info in new}

    def _list(self, partition: str) -> tuple[set[str], list[Listed]]:
        """The names of the windows' own markers, and the batch files in seq order."""
        own: set[str] = set()
        batches: list[Listed] = []
        for info in self.files.listing(folder(partition)):
            if info.type != pafs.FileType.File:
                continue
            if not is_batch(info.base_name):
                own.add(info.base_name)
            elif _seq(info.base_name) is not None:  # a stray name such as _batch-x.json: not ours
                batches.append((info.base_name, info.mtime_ns or 0, info.size or 0))
        return own, sorted(batches, key=lambda listed: _seq(listed[0]) or 0)

    def _held(self, partition: str) -> dict[str, str]:
        """{window id: batch} of the partition's batches, listed again when it changed."""
        changed = self._changed_at(partition)
        with self._lock:
            known = self._listed.get(partition)
        if known is not None:
            if changed is not None and known[0] == changed:
                return known[1]
            if changed is None and time.monotonic() - known[0] < LISTING_S:
                return known[1]
        stamp = changed if changed is not None else time.monotonic()
        held = self._owners(partition, self._list(partition)[1])
        settled = changed is None or time.time_ns() - changed > SETTLED_NS
        with self._lock:
            if len(self._listed) >= PARTITIONS_LIMIT:
                self._listed.clear()
            if settled:
                self._listed[partition] = (stamp, held)
        return held

    def _changed_at(self, partition: str) -> float | None:
        """A folder's modification time (a new batch changes it); None on S3."""
        if not self.files.local:
            return None
        try:
            return float(os.stat(self.files.path(folder(partition))).st_mtime_ns)
        except FileNotFoundError:
            return -1.0

    def _owners(self, partition: str, batches: list[Listed]) -> dict[str, str]:
        held: dict[str, str] = {}
        for listed in batches:
            batch, ids = self._ids(partition, listed)
            for window_id in ids:
                held.setdefault(window_id, batch)
        return held

    def _ids(self, partition: str, listed: Listed) -> tuple[str, list[str]]:
        """A batch's name and its windows' ids, read once."""
        with self._lock:
            found = self._read.get((partition, listed))
        if found is None:
            doc = self._doc(partition, listed[0])
            found = doc["batch"], [info["id"] for info in doc["windows"]]
            with self._lock:
                if self._ids_read + len(found[1]) > IDS_LIMIT:
                    self._read.clear()
                    self._ids_read = 0
                self._read[partition, listed] = found
                self._ids_read += len(found[1])
        return found

    def _doc(self, partition: str, name: str) -> dict:
        """A batch's document; an empty or corrupt one claims nothing. Such a file is what
        a crash before the flush's `files.sync()` leaves (batches are created with
        durable=False), and then the flush's segment still exists: `Head.flush` unlinks it
        only after `write_batch` returned, past that sync, so the segment's next flush
        (`recover`) claims its windows again, in a batch of a later seq."""
        try:
            doc = json.loads(self.files.get(f"{folder(partition)}/{name}") or b"{}")
            return {"batch": str(doc["batch"]), "windows": list(doc["windows"])}
        except (ValueError, KeyError, TypeError):
            return {"batch": "", "windows": []}

    def _marker_batch(self, partition: str, window_id: str) -> str:
        """The batch a window's own marker names ("" for none: an append's, or a
        compaction's): a collector before batches claimed with such markers."""
        data = self.files.get(f"{folder(partition)}/{window_id}")
        try:
            return str(json.loads(data or b"{}").get("batch", ""))
        except ValueError:
            return ""
