"""A store written before the run model and its documents were versioned opens and
reads the same: every command prints what the perfsleuth that wrote it printed."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from cli_runner import perfsleuth

FIXTURES = Path(__file__).parent.parent / "fixtures" / "store"

COMMANDS = {
    "top-1.json": ("top", "1"),
    "top-2.json": ("top", "2"),
    "annotate-all-2.json": ("annotate", "--all", "2"),
    "diff-2-2.json": ("diff", "2", "2"),
    "cache-show-3.json": ("cache", "show", "3"),
    "advise-1.json": ("advise", "1"),
}


@pytest.fixture(scope="module")
def old_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("old") / "store"
    store.mkdir()
    packed = FIXTURES / "before-architecture.duckdb.gz"
    with gzip.open(packed) as src, open(store / "runs.duckdb", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return store


@pytest.mark.parametrize("expected", sorted(COMMANDS))
def test_old_store_reads_the_same(old_store: Path, expected: str):
    command, *args = COMMANDS[expected]
    done = perfsleuth(old_store, command, *args, "--format", "json")
    assert json.loads(done.stdout) == json.loads((FIXTURES / expected).read_text())
