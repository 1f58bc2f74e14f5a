"""`perfsleuth fleet status`: what the store holds and what each host last said."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import cast

import pyarrow.fs as pafs

from ...model.fleet import FleetHost, FleetStatus, StoreCost
from .batches import Batches
from .filesystem import Files
from .layout import partition_start
from .wal import logged_markers

RECENT_PARTITIONS = 2  # hours of window markers read for per-host rates
# Requests of one stored window (HEAD of its marker, PUT of its samples file, PUT of its
# marker) and of one append group (PUT of its stacks and of its frames): appending.py.
WINDOW_REQUESTS = 3
GROUP_REQUESTS = 2
ROLLUP_LEVELS = 2  # minute and hour
# Agent metrics a host also shows in their own fields: what it failed to deliver.
LOSSES = ("windows_dropped", "lost_samples")


def status(batches: Batches, root: str, head: Path) -> FleetStatus:
    """{"store", "bytes", "files", "oldest", "newest", "windows_recent", "hosts": [...]}.

    `oldest`/`newest` are the unix starts of the oldest and newest hour holding data
    (None when empty); each host has `last_push`, `windows` and `samples` of the recent
    hours, `samples_per_s` over the span those windows cover, `metrics`, the last
    status its agent reported (lost samples, dropped windows, its own CPU and memory),
    and of those `windows_dropped` and `lost_samples` (None when not reported).
    Windows in the head's log (`head`) not yet flushed count too.
    """
    files = batches.files
    listing = [i for i in files.listing("", recursive=True) if i.type == pafs.FileType.File]
    hours = _hour_partitions(files)
    stored: list[dict] = []  # the markers of the recent hours
    hosts = _hosts_from_markers(batches, hours[-RECENT_PARTITIONS:], stored, head)
    for doc in _host_documents(files):
        entry = hosts.setdefault(doc["host"], _empty_host(doc["host"]))
        entry["metrics"] = doc.get("metrics", {})
        entry["last_push"] = max(entry["last_push"] or 0.0, doc.get("updated", 0.0))
    return {
        "store": root,
        "bytes": sum(i.size or 0 for i in listing),
        "files": len(listing),
        "oldest": partition_start(hours[0]) if hours else None,
        "newest": partition_start(hours[-1]) if hours else None,
        "windows_recent": sum(h["windows"] for h in hosts.values()),
        "hosts": [_with_rate(hosts[h]) for h in sorted(hosts)],
        "cost": cost([files.relative(i.path) for i in listing], stored),
    }


def cost(names: list[str], stored: list[dict]) -> StoreCost:
    """What the store costs in objects and requests, and what compaction saves.

    `objects_after_compaction`: one raw file and its rollups per hour, one stacks and
    one frames file per day; `query_objects`: the samples and dictionary files a query
    of every hour reads now (at most) and after compaction. `requests_per_hour`: the
    writes of the windows stored in the last hour (their markers say how many and in
    groups of how many)."""
    per_folder = Counter(n.rsplit("/", 1)[0] for n in names if n.endswith(".parquet"))
    raw = {f: n for f, n in per_folder.items() if f.startswith("samples/level=raw/")}
    rollups = sum(
        n for f, n in per_folder.items() if f.startswith("samples/level=") and f not in raw
    )
    dictionaries = {f: n for f, n in per_folder.items() if f.startswith(("stacks/", "frames/"))}
    merged = sum(n - 1 for n in raw.values()) + sum(n - 1 for n in dictionaries.values())
    wanted_rollups = ROLLUP_LEVELS * len(raw)
    hour_ago = time.time() - 3600
    recent = [m for m in stored if m.get("stored_at", 0.0) >= hour_ago]
    groups = sum(1 / max(1, int(m.get("group", 1))) for m in recent)
    return {
        "objects": len(names),
        "objects_after_compaction": len(names) - merged - rollups + wanted_rollups,
        "query_objects": sum(raw.values()) + sum(dictionaries.values()),
        "query_objects_after_compaction": len(raw) + len(dictionaries),
        "windows_last_hour": len(recent),
        "requests_per_hour": round(WINDOW_REQUESTS * len(recent) + GROUP_REQUESTS * groups),
    }


def _hour_partitions(files: Files) -> list[str]:
    return [
        f"{dt}/{hour}"
        for dt in files.names("windows", dirs=True)
        for hour in files.names(f"windows/{dt}", dirs=True)
    ]


def _empty_host(host: str) -> dict:
    return {"host": host, "last_push": None, "windows": 0, "samples": 0, "span": [], "metrics": {}}


def _hosts_from_markers(
    batches: Batches, partitions: list[str], stored: list[dict], head: Path
) -> dict[str, dict]:
    markers: dict[str, dict] = {}
    for partition in partitions:
        markers.update(batches.markers(partition))
    for info in logged_markers(head):
        markers.setdefault(info["id"], info)
    hosts: dict[str, dict] = {}
    for info in markers.values():
        if "host" not in info:
            continue  # the marker of a window compaction merged before it was marked
        stored.append(info)
        entry = hosts.setdefault(info["host"], _empty_host(info["host"]))
        entry["windows"] += 1
        entry["samples"] += info["samples"]
        entry["last_push"] = max(entry["last_push"] or 0.0, info["stored_at"])
        entry["span"] += [info["start"], info["end"]]
    return hosts


def _host_documents(files: Files) -> list[dict]:
    return [json.loads(files.get(f"hosts/{name}")) for name in files.names("hosts")]


def _with_rate(entry: dict) -> FleetHost:
    span = entry.pop("span")
    seconds = max(span) - min(span) if span else 0.0
    losses = {key: entry["metrics"].get(key) for key in LOSSES}
    rate = entry["samples"] / seconds if seconds else 0.0
    return cast(FleetHost, {**entry, "samples_per_s": rate, **losses})
