"""Small Parquet files kept in memory by a querying process (fleet/kept_files.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from perfsleuth.fleet import kept_files
from perfsleuth.fleet.kept_files import KeptFiles

SCHEMA = pa.schema([("stack_id", pa.int64()), ("name", pa.string())])
LOCAL = pafs.LocalFileSystem()


def write(path: Path, ids: list[int]) -> str:
    pq.write_table(pa.table({"stack_id": ids}), path)  # an older file: no `name` column
    return str(path)


def test_small_files_are_kept_the_second_time_and_read_again_when_changed(
    tmp_path: Path,
) -> None:
    kept = KeptFiles()
    a, b = write(tmp_path / "a.parquet", [1, 2]), write(tmp_path / "b.parquet", [3])
    rows, scanned = kept.split(LOCAL, [a, b], SCHEMA)  # a one-shot query: scanned
    assert rows.num_rows == 0 and scanned == [a, b] and not kept._tables
    rows, scanned = kept.split(LOCAL, [a, b], SCHEMA)
    assert scanned == []
    assert rows.schema == SCHEMA and rows.column("stack_id").to_pylist() == [1, 2, 3]
    assert rows.column("name").null_count == 3  # read as a scan reads it
    assert len(kept._tables) == 2
    again, _ = kept.split(LOCAL, [a, b], SCHEMA)
    assert again.equals(rows) and len(kept._tables) == 2
    write(tmp_path / "a.parquet", [7, 8, 9])  # another file under the same name
    os.utime(a, ns=(1, 1))
    assert kept.split(LOCAL, [a], SCHEMA)[1] == [a]  # a new file: scanned first
    changed, _ = kept.split(LOCAL, [a], SCHEMA)
    assert changed.column("stack_id").to_pylist() == [7, 8, 9]


def test_large_files_are_scanned_and_memory_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = [write(tmp_path / f"s{i}.parquet", list(range(100))) for i in range(4)]
    big = write(tmp_path / "big.parquet", list(range(100_000)))
    monkeypatch.setattr(kept_files, "KEEP_FILE_BYTES", os.path.getsize(big) - 1)
    one = pq.read_table(small[0]).column(0).nbytes
    kept = KeptFiles(limit=2 * one * 2)  # room for about two of the small ones
    kept.split(LOCAL, [*small, big], SCHEMA)
    rows, scanned = kept.split(LOCAL, [*small, big], SCHEMA)
    assert scanned == [big]
    assert rows.num_rows == 400  # every small file's rows, whatever is kept after
    assert 1 <= len(kept._tables) < 4
    assert kept._bytes <= kept.limit


def test_a_deleted_file_is_a_file_not_found_that_makes_queries_select_again(
    tmp_path: Path,
) -> None:
    with pytest.raises(FileNotFoundError):
        KeptFiles().split(LOCAL, [str(tmp_path / "gone.parquet")], SCHEMA)
