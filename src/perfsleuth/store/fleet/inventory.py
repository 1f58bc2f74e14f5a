"""The library inventory: which shared libraries the sampled processes had loaded.

An agent that reads /proc/PID/maps lists each process's libraries (model.fleet.Process
`libraries`); the window's marker keeps them per executable. Markers are small JSON
files, one per window, so this reads one per window of the range: fine for the hours
`fleet libraries` asks about, not meant for months.
"""

from __future__ import annotations

import json

from .filesystem import Files
from .layout import hour_partitions, partition_start


def inventory(files: Files, start: float, end: float) -> list[dict]:
    """Markers of windows starting in [start, end) that list libraries."""
    found = []
    for partition in hour_partitions(start, end):
        if partition_start(partition) + 3600 <= start:
            continue
        for name in files.names(f"windows/{partition}"):
            info = json.loads(files.get(f"windows/{partition}/{name}") or b"{}")
            if info.get("libraries") and start <= info.get("start", start) < end:
                found.append(info)
    return found
