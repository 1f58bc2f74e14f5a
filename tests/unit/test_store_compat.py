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
# Documents that have grown since (keys added, none changed): compared on the old keys.
# the advice document (kind, version, each finding's gain, ...); a count run's top (each
# event's exact count per row, the events); a count diff (the files paired across
# directories, each line's file in run A)
GROWN = {"advise-1.json", "top-2.json", "diff-2-2.json"}


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
    printed = json.loads(done.stdout)
    before = json.loads((FIXTURES / expected).read_text())
    assert (_on_keys_of(printed, before) if expected in GROWN else printed) == before


def _on_keys_of(new: object, old: object) -> object:
    """NEW cut to the keys OLD has, at every depth (a key OLD has and NEW lacks stays out,
    so the comparison fails)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _on_keys_of(new[k], old[k]) for k in old if k in new}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_on_keys_of(n, o) for n, o in zip(new, old, strict=True)]
    return new
