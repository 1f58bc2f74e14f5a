"""Retention: whole partitions older than a cut-off are deleted, never single rows.

Samples go first (every level), then window markers, then the stacks and frames of
days no longer holding any hour: a reader never finds samples without their stacks. A
run holds the maintenance lease (lease.py), so it never deletes what a compaction is
writing.
"""

from __future__ import annotations

from .filesystem import Files
from .layout import LEVELS, partition_start
from .lease import Lease


def expire(files: Files, older_than: float, where: str) -> list[str]:
    """Delete hour partitions that end at or before unix time `older_than`; their names."""
    with Lease(files, "retention run", where) as lease:
        return _expire(files, older_than, lease)


def _expire(files: Files, older_than: float, lease: Lease) -> list[str]:
    dropped: list[str] = []
    for level in LEVELS:
        for partition in _old(files, f"samples/level={level}", older_than):
            lease.check()
            files.delete_dir(f"samples/level={level}/{partition}")
            if level == "raw":
                dropped.append(partition)
    for partition in _old(files, "windows", older_than):
        files.delete_dir(f"windows/{partition}")
    for table in ("samples/level=raw", "samples/level=minute", "samples/level=hour", "windows"):
        for dt in files.names(table, dirs=True):
            if not files.names(f"{table}/{dt}", dirs=True):
                files.delete_dir(f"{table}/{dt}")
    for table in ("stacks", "frames"):
        for dt in files.names(table, dirs=True):
            if partition_start(dt) + 86400 <= older_than:
                files.delete_dir(f"{table}/{dt}")
    return dropped


def _old(files: Files, folder: str, older_than: float) -> list[str]:
    return [
        f"{dt}/{hour}"
        for dt in files.names(folder, dirs=True)
        for hour in files.names(f"{folder}/{dt}", dirs=True)
        if partition_start(f"{dt}/{hour}") + 3600 <= older_than
    ]
