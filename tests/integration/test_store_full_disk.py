"""The store on a full disk (issue 19, item 7): one clear line, the disk given back,
and the next write works. A small tmpfs is mounted inside the test (root only)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tmpfs

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.store import runs
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs.small_disk(tmp_path / "disk", "6m") as mount:
        yield mount


def profile(functions: int) -> Profile:
    builder = ProfileBuilder()
    for i in range(functions):
        builder.add([Frame(f"function_{i}_{'x' * 40}", "a.out", f"f{i}.c", i), Frame("main")], 1)
    return builder.build()


def footprint(store: Store) -> int:
    return sum(p.stat().st_size for p in store.root.iterdir())


def test_a_run_too_large_for_the_disk_is_refused_before_writing(small_disk: Path) -> None:
    store = Store(small_disk / "store")
    store.add_run(RunInfo(command="small"), Recording(profile(100)))
    before = footprint(store)
    with pytest.raises(
        UserError, match=r"the store's disk is full: [\d.]+ MB needed, [\d.]+ MB free"
    ):
        store.add_run(RunInfo(command="big"), Recording(profile(200_000)))
    assert footprint(store) == before
    assert [r.command for r in store.runs()] == ["small"]


def test_a_write_that_fills_the_disk_gives_it_back(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the estimate is wrong and DuckDB fills the disk, the files are cut back,
    the message says so (no TransactionContext Error), and the next write works."""
    store = Store(small_disk / "store")
    store.add_run(RunInfo(command="small"), Recording(profile(100)))
    before = footprint(store)
    monkeypatch.setattr(runs, "SPACE_FACTOR", 0)
    monkeypatch.setattr(runs, "SPACE_MARGIN", 0)
    for _ in range(2):
        with pytest.raises(
            UserError, match=r"the store's disk is full: more than [\d.]+ MB needed"
        ):
            store.add_run(RunInfo(command="big"), Recording(profile(200_000)))
        assert footprint(store) == before
    store.add_run(RunInfo(command="after"), Recording(profile(100)))
    assert [r.command for r in store.runs()] == ["after", "small"]


def test_import_on_a_full_disk_says_one_line(small_disk: Path, tmp_path: Path) -> None:
    folded = tmp_path / "big.folded"
    folded.write_text("".join(f"main;function_{i}_{'y' * 60} 1\n" for i in range(150_000)))
    cmd = [sys.executable, "-m", "perfsleuth.cli", "--store", str(small_disk / "s"), "import"]
    for _ in range(2):
        done = subprocess.run([*cmd, str(folded)], capture_output=True, text=True, timeout=300)
        assert done.returncode != 0
        assert "the store's disk is full:" in done.stderr
        assert "Traceback" not in done.stderr and "TransactionContext" not in done.stderr
    assert sum(p.stat().st_size for p in (small_disk / "s").iterdir()) < 2 << 20
