"""The fleet store: windows of samples from many hosts as partitioned Parquet files.

`FleetStore(root)` appends windows (atomic, deduplicated by window id), keeps host
status, and selects the files a query reads; compaction.py merges small files and
writes rollups, retention.py drops old partitions. layout.py and docs/fleet.md say
where everything lives, so any Parquet reader can query the store.
"""

from __future__ import annotations

import os

from ..layout import DB_NAME
from .filesystem import StoreUnavailable
from .store import FleetStore

__all__ = ["FleetStore", "StoreUnavailable", "fleet_root"]

FLEET_FOLDER = "fleet"


def fleet_root(store: str) -> str:
    """The fleet store a `--store` value names (every fleet command and the collector).

    An s3:// URL or a folder is the fleet store itself, except a run store (the
    default `$PERFSLEUTH_STORE` or `.perfsleuth`, or a folder holding runs.duckdb),
    whose fleet store is its `fleet/` subfolder: so with no --store at all the fleet
    store is `.perfsleuth/fleet/`.
    """
    if "://" in store:
        return store
    defaults = {os.path.normpath(os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth")}
    defaults.add(".perfsleuth")
    if os.path.normpath(store) in defaults or os.path.exists(os.path.join(store, DB_NAME)):
        return os.path.join(store, FLEET_FOLDER)
    return store
