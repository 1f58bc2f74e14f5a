"""store.fleet.label_values: the window labels a store holds, through compaction, which
a restarted collector's cardinality limit starts from."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_fleet_store import T0, make_window, stack_pool

from perfsleuth.collector.cardinality import Cardinality
from perfsleuth.formats.wire.ingest import PayloadError
from perfsleuth.store.fleet import FleetStore

POOL = stack_pool()


def test_the_stored_windows_labels_are_read_back_before_and_after_compaction(
    tmp_path: Path,
) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    assert store.label_values() == {}
    store.append(make_window(0, T0, "h1", "api", POOL, env="prod", version="1"))
    store.append(make_window(1, T0 + 10, "h2", "api", POOL, env="prod", version="2"))
    store.append(make_window(2, T0 + 4000, "h1", "db", POOL, env="staging"))
    expected = {"service": {"api", "db"}, "env": {"prod", "staging"}, "version": {"1", "2"}}
    assert store.label_values() == expected  # host, pid, comm...: not window limits
    store.compact()
    assert store.label_values() == expected


def test_a_limit_seeded_from_the_store_refuses_what_a_fresh_one_would_accept(
    tmp_path: Path,
) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    for i, version in enumerate(("1", "2")):
        store.append(make_window(i, T0 + 10 * i, "h1", "api", POOL, version=version))
    seeded = Cardinality(max_values=2)
    seeded.seed(store.label_values())
    labels = {"host": "h9", "service": "api", "version": "3"}
    Cardinality(max_values=2).admit(labels)
    with pytest.raises(PayloadError, match="'version' already has 2 distinct values"):
        seeded.admit(labels)
    seeded.admit({"host": "h9", "service": "api", "version": "2"})
