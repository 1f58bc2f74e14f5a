"""The library inventory: which shared libraries the sampled processes had loaded.

An agent that reads /proc/PID/maps lists each process's libraries (model.fleet.Process
`libraries`); the window's marker keeps them per executable. Markers are small JSON
files, one per window, so this reads one per window of the range: fine for the hours
`fleet libraries` asks about, not meant for months.
"""

from __future__ import annotations

import json
from pathlib import Path

from .filesystem import Files
from .layout import hour_partitions, partition_start
from .wal import logged_markers


def inventory(files: Files, start: float, end: float, head: Path) -> list[dict]:
    """Markers of windows starting in [start, end) that list libraries, those of the
    head's log (`head`) not yet flushed too."""
    found: dict[str, dict] = {}
    for partition in hour_partitions(start, end):
        if partition_start(partition) + 3600 <= start:
            continue
        for name in files.names(f"windows/{partition}"):
            found[name] = json.loads(files.get(f"windows/{partition}/{name}") or b"{}")
    for info in logged_markers(head):
        found.setdefault(info["id"], info)
    return [
        info
        for info in found.values()
        if info.get("libraries") and start <= info.get("start", start) < end
    ]
