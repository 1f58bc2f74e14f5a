"""One marker per head flush and partition (store/fleet/batches.py): each window claimed
by exactly one batch, a flush killed at any step leaves the store readable and complete
and is finished by the next head, and stores of per-window markers still read."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from unit.test_fleet_store import T0, expected_top, fleet, fleet_top

from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.fleet.appending import marker_info
from perfsleuth.store.fleet.batches import BATCH_PREFIX, Batches
from perfsleuth.store.fleet.layout import hour_partition, marker
from perfsleuth.store.fleet.wal import read_segment, segments

END = T0 + 7200
SPACING = 600.0  # 12 windows a host over two hour partitions
TESTS = Path(__file__).parents[1]

# Where the flush's process dies: the first batch marker written (the other partition's
# not), every marker written (before their sync), the dictionaries written (no samples
# file), one partition's samples file written, every file written (segment kept).
KILLS = {
    "first marker": """
        create = Files.create
        def killed(self, rel, data, *, durable=True):
            tag = create(self, rel, data, durable=durable)
            if "/_batch-" in rel:
                os._exit(0)
            return tag
        Files.create = killed
    """,
    "markers": "Files.sync = lambda self: os._exit(0)",
    "dictionaries": "head._samples_file = lambda *a: os._exit(0)",
    "one samples file": """
        samples_file = head._samples_file
        def killed(*a):
            samples_file(*a)
            os._exit(0)
        head._samples_file = killed
    """,
    "segment": """
        write_batch = head.write_batch
        def killed(*a, **k):
            write_batch(*a, **k)
            os._exit(0)
        head.write_batch = killed
    """,
}


def batch_ids(root: Path) -> list[str]:
    """The window ids of every batch marker, once per batch that holds them."""
    return [
        info["id"]
        for path in (root / "windows").rglob(f"{BATCH_PREFIX}*")
        if path.stat().st_size and path.name != f"{BATCH_PREFIX}x.json"
        for info in json.loads(path.read_text())["windows"]
    ]


def stored_samples(root: Path) -> int:
    files = (root / "samples/level=raw").rglob("*.parquet")
    return sum(sum(pq.read_table(f).column("samples").to_pylist()) for f in files)


def status_windows(store: FleetStore) -> int:
    return sum(h["windows"] for h in store.status()["hosts"])


@pytest.mark.parametrize("step", KILLS)
def test_a_flush_killed_at_any_step_is_counted_once_and_finished_by_the_next_head(
    tmp_path: Path, step: str
) -> None:
    windows = fleet(spacing=SPACING)
    root = tmp_path / "fleet"
    script = f"""
        import os, sys
        sys.path.insert(0, {str(TESTS)!r})
        from unit.test_fleet_store import fleet
        from perfsleuth.store.fleet import FleetStore, head
        from perfsleuth.store.fleet.filesystem import Files
        h = FleetStore({str(root)!r}).head(flush_s=3600)
        for w in fleet(spacing={SPACING}):
            assert h.append(w)
{textwrap.indent(textwrap.dedent(KILLS[step]), " " * 8)}
        h.flush()
        raise SystemExit("the flush was not killed")
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True)
    store = FleetStore(str(root))
    logged = [r for s in segments(store.head_folder) for r in read_segment(s)]
    assert len(logged) == len(windows)  # the kill left the log
    want = expected_top(windows)
    assert fleet_top(store, T0, END)["rows"] == want
    assert status_windows(store) == len(windows)
    store.head(flush_s=3600).close()  # flushes the orphan
    assert segments(store.head_folder) == []
    assert fleet_top(store, T0, END)["rows"] == want
    assert status_windows(store) == len(windows)
    assert sorted(batch_ids(root)) == sorted(w.id for w in windows)
    assert stored_samples(root) == sum(w.profile.num_samples for w in windows)
    reopened = FleetStore(str(root)).head(flush_s=3600)
    assert not any(reopened.append(w) for w in windows)  # stored: duplicates
    reopened.close()


def test_empty_batches_left_by_a_crash_before_the_sync_claim_nothing(tmp_path: Path) -> None:
    """A flush killed at its sync, its batch files then empty (not durable) and a stray
    `_batch-x.json` beside them: the store still answers, and the next head flushes the
    kept segment claiming every window again, in batches of later seqs."""
    windows = fleet(spacing=SPACING)
    root = tmp_path / "fleet"
    script = f"""
        import os
        from perfsleuth.store.fleet import FleetStore
        from perfsleuth.store.fleet.filesystem import Files
        h = FleetStore({str(root)!r}).head(flush_s=3600)
        for w in fleet_windows:
            assert h.append(w)
        Files.sync = lambda self: os._exit(0)
        h.flush()
        raise SystemExit("the flush was not killed")
    """
    prelude = f"import sys; sys.path.insert(0, {str(TESTS)!r})\n"
    prelude += (
        f"from unit.test_fleet_store import fleet; fleet_windows = fleet(spacing={SPACING})\n"
    )
    subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], check=True)
    emptied = list((root / "windows").rglob(f"{BATCH_PREFIX}*"))
    assert emptied
    for path in emptied:
        path.write_bytes(b"")
        (path.parent / f"{BATCH_PREFIX}x.json").write_text("{}")
    store = FleetStore(str(root))
    assert status_windows(store) == len(windows)  # the log's, its batches claim nothing
    assert not Batches(store.files).stored(hour_partition(T0), windows[0].id)
    store.head(flush_s=3600).close()  # flushes the orphan
    assert segments(store.head_folder) == []
    assert sorted(batch_ids(root)) == sorted(w.id for w in windows)
    assert status_windows(store) == len(windows)
    assert fleet_top(store, T0, END)["rows"] == expected_top(windows)


def test_flushes_racing_for_a_partition_claim_each_window_once(tmp_path: Path) -> None:
    """Four collectors (each its own reading of the markers) claim overlapping windows of
    one partition at once, many times: every window is held by one batch, and each
    flush was told exactly the windows its batch holds."""
    store = FleetStore(str(tmp_path / "fleet"))
    windows = fleet()
    partition = hour_partition(T0)
    markers = [marker_info(w, w.profile.num_samples, 1) for w in windows]
    claimed: dict[str, set[str]] = {}
    start = threading.Barrier(4)

    def flush(n: int) -> None:
        batches = Batches(store.files)
        start.wait()
        for round_ in range(6):
            name = f"batch-{n}-{round_}"
            offered = markers[(n + round_) % 5 :: 2] if round_ < 5 else markers
            claimed[name] = batches.claim(partition, name, offered, len(offered))

    threads = [threading.Thread(target=flush, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held: dict[str, set[str]] = {}
    for path in (tmp_path / "fleet" / "windows" / partition).glob(f"{BATCH_PREFIX}*"):
        doc = json.loads(path.read_text())
        held.setdefault(doc["batch"], set()).update(i["id"] for i in doc["windows"])
    assert sorted(i for ids in held.values() for i in ids) == sorted(w.id for w in windows)
    assert {b: ids for b, ids in claimed.items() if ids} == held
    assert all(Batches(store.files).stored(partition, w.id) for w in windows)


def test_a_store_of_per_window_markers_is_read_and_its_windows_are_duplicates(
    tmp_path: Path,
) -> None:
    """Windows of a store's own appends (a marker each) are duplicates to a head, and a
    head's to an append; the segment of a collector before batches that died after
    marking some windows for its batch (a marker each, naming it) is finished keeping
    those: every window counted once, by queries and by `fleet status`."""
    windows = fleet()
    appended, logged = windows[:10], windows[10:]
    root = tmp_path / "fleet"
    store = FleetStore(str(root))
    assert all(store.append(w) for w in appended)
    head = store.head(flush_s=3600)
    assert not any(head.append(w) for w in appended)
    assert all(head.append(w) for w in logged)
    [segment] = segments(store.head_folder)
    name = segment.name[: -len(".wal")]
    for record in read_segment(segment)[:7]:  # what the old collector's flush had marked
        info = {**record.marker, "group": len(logged), "batch": name}
        path = root / marker(record.partition, record.window_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(info))
    head.close()
    assert head.dropped == 0
    assert sorted(batch_ids(root)) == sorted(w.id for w in logged[7:])
    assert fleet_top(store)["rows"] == expected_top(windows)
    assert status_windows(store) == len(windows)
    assert not any(store.append(w) for w in windows)
    assert stored_samples(root) == sum(w.profile.num_samples for w in windows)
