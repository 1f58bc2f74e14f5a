"""The window labels a fleet store already holds: what a restarted collector's label
cardinality limit starts from (collector/cardinality.py).

A window's labels are stored per sample: `service` in its own column, the user's other
labels as a JSON object in `labels` (writer.py). The other fixed columns (pid, comm,
exe, build_id, cgroup) are mostly per process, not per window, and are not read: they
would count every process a host ran against a label limit.
"""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pyarrow.parquet as pq

from .filesystem import Files
from .layout import samples_dir
from .reading import live_raw, partitions

COLUMNS = ["service", "labels"]


def label_values(files: Files) -> dict[str, set[str]]:
    """{label name: values} of every window in the store's raw level."""
    values: dict[str, set[str]] = {}
    for partition in partitions(files, 0.0, float("inf")):
        folder = samples_dir("raw", partition)
        for name in live_raw(files, partition):
            path = files.path(f"{folder}/{name}")
            table = pq.read_table(path, columns=COLUMNS, filesystem=files.fs)
            for service in pc.unique(table.column("service")).to_pylist():
                if service:
                    values.setdefault("service", set()).add(service)
            for text in pc.unique(table.column("labels")).to_pylist():
                for key, value in json.loads(text or "{}").items():
                    values.setdefault(key, set()).add(str(value))
    return values
