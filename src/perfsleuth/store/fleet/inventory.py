"""The library inventory: which shared libraries the sampled processes had loaded.

An agent that reads /proc/PID/maps lists each process's libraries (model.fleet.Process
`libraries`); the window's marker keeps them per executable. Markers are small JSON
files, one per head flush and partition (batches.py) or, from appends and older
collectors, one per window: fine for the hours `fleet libraries` asks about, not meant
for months.
"""

from __future__ import annotations

from pathlib import Path

from .batches import Batches
from .layout import hour_partitions, partition_start
from .wal import logged_markers


def inventory(batches: Batches, start: float, end: float, head: Path) -> list[dict]:
    """Markers of windows starting in [start, end) that list libraries, those of the
    head's log (`head`) not yet flushed too."""
    found: dict[str, dict] = {}
    for partition in hour_partitions(start, end):
        if partition_start(partition) + 3600 <= start:
            continue
        found.update(batches.markers(partition))
    for info in logged_markers(head):
        found.setdefault(info["id"], info)
    return [
        info
        for info in found.values()
        if info.get("libraries") and start <= info.get("start", start) < end
    ]
