"""`perfsleuth fleet status`: what the store holds and what each host last said."""

from __future__ import annotations

import json

import pyarrow.fs as pafs

from .filesystem import Files
from .layout import partition_start

RECENT_PARTITIONS = 2  # hours of window markers read for per-host rates
# Agent metrics a host also shows in their own fields: what it failed to deliver.
LOSSES = ("windows_dropped", "lost_samples")


def status(files: Files, root: str) -> dict:
    """{"store", "bytes", "files", "oldest", "newest", "windows_recent", "hosts": [...]}.

    `oldest`/`newest` are the unix starts of the oldest and newest hour holding data
    (None when empty); each host has `last_push`, `windows` and `samples` of the recent
    hours, `samples_per_s` over the span those windows cover, `metrics`, the last
    status its agent reported (lost samples, dropped windows, its own CPU and memory),
    and of those `windows_dropped` and `lost_samples` (None when not reported).
    """
    listing = [i for i in files.listing("", recursive=True) if i.type == pafs.FileType.File]
    hours = _hour_partitions(files)
    hosts = _hosts_from_markers(files, hours[-RECENT_PARTITIONS:])
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
    }


def _hour_partitions(files: Files) -> list[str]:
    return [
        f"{dt}/{hour}"
        for dt in files.names("windows", dirs=True)
        for hour in files.names(f"windows/{dt}", dirs=True)
    ]


def _empty_host(host: str) -> dict:
    return {"host": host, "last_push": None, "windows": 0, "samples": 0, "span": [], "metrics": {}}


def _hosts_from_markers(files: Files, partitions: list[str]) -> dict[str, dict]:
    hosts: dict[str, dict] = {}
    for partition in partitions:
        for name in files.names(f"windows/{partition}"):
            info = json.loads(files.get(f"windows/{partition}/{name}") or b"{}")
            if "host" not in info:
                continue  # the marker of a crashed append, completed by its retry
            entry = hosts.setdefault(info["host"], _empty_host(info["host"]))
            entry["windows"] += 1
            entry["samples"] += info["samples"]
            entry["last_push"] = max(entry["last_push"] or 0.0, info["stored_at"])
            entry["span"] += [info["start"], info["end"]]
    return hosts


def _host_documents(files: Files) -> list[dict]:
    return [json.loads(files.get(f"hosts/{name}")) for name in files.names("hosts")]


def _with_rate(entry: dict) -> dict:
    span = entry.pop("span")
    seconds = max(span) - min(span) if span else 0.0
    losses = {key: entry["metrics"].get(key) for key in LOSSES}
    return {**entry, "samples_per_s": entry["samples"] / seconds if seconds else 0.0, **losses}
