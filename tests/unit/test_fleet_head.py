"""The collector's head (store/fleet/head.py): windows acknowledged from the write-ahead
log, counted once by queries before, during and after a flush, a crash and compactions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pyarrow.parquet as pq
from unit.test_fleet_store import T0, expected_top, fleet, fleet_top

from perfsleuth.formats.wire import pyroscope
from perfsleuth.formats.wire.ingest import IngestParams
from perfsleuth.model.fleet import Window
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.fleet.head import write_batch
from perfsleuth.store.fleet.wal import SegmentReader, read_segment, segments
from perfsleuth.store.fleet.writer import window_tables

END = T0 + 7200
FIXTURES = Path(__file__).parents[1] / "fixtures"


def go_cpu_push(window_id: str) -> list[Window]:
    """pyroscope-go v1.5.0's captured CPU push to /ingest, read as the collector reads it."""
    sent = json.loads((FIXTURES / "pyroscope" / "go-1.5.0-cpu.json").read_text())
    query = dict(parse_qsl(urlsplit(sent["path"]).query))
    body = (FIXTURES / "pyroscope" / "go-1.5.0-cpu.bin").read_bytes()
    return pyroscope.decode(body, IngestParams.parse(query, window_id), sent["content-type"])


def test_windows_in_the_head_are_counted_once_before_and_after_the_flush(tmp_path: Path) -> None:
    windows = fleet()
    store = FleetStore(str(tmp_path / "fleet"))
    head = store.head(flush_s=3600)
    assert all(head.append(w) for w in windows)
    assert not any(head.append(w) for w in windows)  # duplicates, still in the head
    want = expected_top(windows)
    assert fleet_top(store, T0, END)["rows"] == want  # from the log alone
    assert store.select(T0, END).samples == []
    head.flush()
    assert fleet_top(store, T0, END)["rows"] == want  # from Parquet alone
    assert store.select(T0, END).head.records == []
    assert not any(head.append(w) for w in windows)  # duplicates, now by their markers
    assert len(list((tmp_path / "fleet/samples/level=raw").rglob("h-*.parquet"))) == 1
    assert {h["host"] for h in store.status()["hosts"]} == {"web-0", "web-1", "web-2"}
    head.close()
    assert segments(store.head_folder) == []


def test_a_flush_cut_short_is_counted_once_and_finished_by_the_next_head(tmp_path: Path) -> None:
    """The batch written but its segment not yet deleted (a crash right there): queries
    count it once, through compactions too; a new head finishes the flush."""
    windows = fleet()
    root = tmp_path / "fleet"
    script = f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from unit.test_fleet_store import fleet
        from perfsleuth.store.fleet import FleetStore
        head = FleetStore({str(root)!r}).head(flush_s=3600)
        for w in fleet():
            assert head.append(w)
        os._exit(0)  # killed: no flush
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True)
    store = FleetStore(str(root))
    [segment] = segments(store.head_folder)
    records = read_segment(segment)
    assert len(records) == len(windows)
    want = expected_top(windows)
    assert fleet_top(store, T0, END)["rows"] == want
    with ThreadPoolExecutor(4) as pool:
        assert write_batch(store.files, segment.name[:-4], records, pool) == 0
    assert fleet_top(store, T0, END)["rows"] == want
    store.compact()
    store.compact()
    assert fleet_top(store, T0, END)["rows"] == want
    assert segments(store.head_folder) == [segment]
    store.head(flush_s=3600).close()  # flushes the orphan: nothing new to write
    assert segments(store.head_folder) == []
    assert fleet_top(store, T0, END)["rows"] == want


def test_a_torn_record_ends_the_log(tmp_path: Path) -> None:
    windows = fleet()
    store = FleetStore(str(tmp_path / "fleet"))
    head = store.head(flush_s=3600)
    for w in windows:
        head.append(w)
    segment = head._segment.path
    data = segment.read_bytes()
    copy = store.head_folder / "0-torn.wal"
    copy.write_bytes(data[:-10])  # the last record cut short, as by a crash mid-write
    assert [r.window_id for r in read_segment(copy)] == [w.id for w in windows[:-1]]
    copy.unlink()
    head.close()


def test_a_window_pushed_to_two_heads_is_stored_once(tmp_path: Path) -> None:
    """Two collectors on one store both acknowledged a retried window: the first flush
    claims it, the second leaves it out."""
    windows = fleet()
    store = FleetStore(str(tmp_path / "fleet"))
    first, second = store.head(flush_s=3600), store.head(flush_s=3600)
    assert all(first.append(w) for w in windows)
    assert all(second.append(w) for w in windows[:5])
    want = expected_top(windows)
    assert fleet_top(store, T0, END)["rows"] == want
    first.flush()
    second.flush()
    assert second.dropped == 5
    assert fleet_top(store, T0, END)["rows"] == want
    first.close()
    second.close()


def test_a_day_s_stacks_are_written_once_by_a_head_and_again_after_compaction(
    tmp_path: Path,
) -> None:
    """A flush adds only the stacks and frames no earlier flush of the day wrote; once a
    compaction merged the files the head remembered, it writes them again, and every
    query answers as from the windows."""
    windows = fleet()
    first, second, third = windows[0::3], windows[1::3], windows[2::3]
    store = FleetStore(str(tmp_path / "fleet"))
    head = store.head(flush_s=3600)

    def ids(ws: list[Window], table: str) -> set[int]:
        return {i for w in ws for i in getattr(window_tables(w), table).column(0).to_pylist()}

    def rows(table: str) -> int:
        files = (tmp_path / "fleet" / table).rglob("*.parquet")
        return sum(pq.read_metadata(f).num_rows for f in files)

    for w in first:
        head.append(w)
    head.flush()
    stacks, frames = rows("stacks"), rows("frames")
    assert stacks > 0 and frames > 0
    for w in second:
        head.append(w)
    head.flush()
    assert rows("stacks") - stacks == len(ids(second, "stacks") - ids(first, "stacks"))
    assert rows("frames") - frames == len(ids(second, "frames") - ids(first, "frames"))
    assert fleet_top(store, T0, END)["rows"] == expected_top(first + second)
    store.compact()
    compacted = rows("stacks")
    for w in third:
        head.append(w)
    head.flush()
    assert rows("stacks") - compacted == len(ids(third, "stacks"))  # the files it knew are gone
    store.compact()
    assert fleet_top(store, T0, END)["rows"] == expected_top(windows)
    head.close()


def test_queries_read_the_log_s_new_records_only_and_forget_deleted_segments(
    tmp_path: Path,
) -> None:
    """A querying process reads each segment on from where its last read stopped: a
    window appended between two queries is counted, none twice, a torn tail is read
    again once whole, and a flushed segment is forgotten."""
    windows = fleet()
    store = FleetStore(str(tmp_path / "fleet"))
    head = store.head(flush_s=3600)
    reader = SegmentReader()
    for w in windows[:5]:
        head.append(w)
    [(path, first)] = reader.records(store.head_folder)
    assert [r.window_id for r in first] == [w.id for w in windows[:5]]
    head.append(windows[5])
    data = path.read_bytes()
    whole = len(data)
    with open(path, "ab") as f:  # a writer mid-record, as another process sees it
        f.write(data[-40:-20])
    [(_, second)] = reader.records(store.head_folder)
    assert [r.window_id for r in second] == [w.id for w in windows[:6]]
    with open(path, "r+b") as f:  # the torn bytes replaced by a whole record
        f.truncate(whole)
    for w in windows[6:]:
        head.append(w)
    [(_, third)] = reader.records(store.head_folder)
    assert [r.window_id for r in third] == [w.id for w in windows]
    assert fleet_top(store, T0, END)["rows"] == expected_top(windows)
    head.flush()
    assert [p for p, _ in reader.records(store.head_folder)] == [head._segment.path]
    assert path not in reader._read
    head.close()


def test_a_segment_of_the_first_log_format_is_read_and_flushed(tmp_path: Path) -> None:
    """tests/fixtures/fleet_head/psw1-segment.wal: pyroscope-go's captured CPU push (two
    windows, by its samples' labels) logged by the collector before the log kept columns
    (PSW1: Arrow IPC tables), its collector killed. A collector of today flushes it: the
    same rows as today's reading of that push."""
    store = FleetStore(str(tmp_path / "fleet"))
    store.head_folder.mkdir(parents=True)
    segment = store.head_folder / "20260101T000000-1.wal"
    segment.write_bytes((FIXTURES / "fleet_head" / "psw1-segment.wal").read_bytes())
    records = read_segment(segment)
    assert [(r.window_id, r.marker["samples"]) for r in records] == [
        ("go-cpu-1", 26),
        ("go-cpu-1.1", 19),
    ]
    today = {w.id: window_tables(w) for w in go_cpu_push("go-cpu-1")}
    keys = {"samples": ["stack_id", "pid", "comm"], "stacks": ["stack_id"], "frames": ["frame_id"]}
    for record in records:
        for table, key in keys.items():
            logged = getattr(record.tables, table).sort_by([(k, "ascending") for k in key])
            read = getattr(today[record.window_id], table).sort_by([(k, "ascending") for k in key])
            assert logged.equals(read)
    store.head(flush_s=3600).close()
    assert segments(store.head_folder) == []
    [flushed] = (tmp_path / "fleet/samples/level=raw").rglob("h-*.parquet")
    assert sum(pq.read_table(flushed).column("samples").to_pylist()) == 45
