"""Flame graphs, TopN and run facts kept beside the store: a fresh server reads, never stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import perfsleuth
from uistore import make_store

from perfsleuth.model.run import RunInfo
from perfsleuth.server import diskcache
from perfsleuth.server.api import Api
from perfsleuth.server.diskcache import DiskCache
from perfsleuth.store.runs import Store


def _info(run_id: int = 1, started: float = 1000.0) -> RunInfo:
    info = RunInfo(command="x", started=started)
    info.id = run_id
    return info


def test_computed_once_then_read(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "ui-cache")
    calls: list[int] = []

    def compute() -> bytes:
        calls.append(1)
        return b"payload"

    assert cache.get(_info(), "flame", compute) == b"payload"
    assert DiskCache(tmp_path / "ui-cache").get(_info(), "flame", compute) == b"payload"
    assert len(calls) == 1
    assert [p.name.startswith("run1-flame-") for p in (tmp_path / "ui-cache").iterdir()] == [True]


def test_changed_code_or_a_recreated_run_replaces_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path)
    cache.get(_info(), "flame", lambda: b"old")
    monkeypatch.setattr(diskcache, "code_stamp", lambda: "edited")
    assert cache.get(_info(), "flame", lambda: b"new code") == b"new code"
    assert cache.get(_info(started=2000.0), "flame", lambda: b"other run") == b"other run"
    assert [p.read_bytes() for p in tmp_path.iterdir()] == [b"other run"]


def test_code_stamp_follows_the_package_files() -> None:
    assert diskcache.code_stamp() == diskcache.code_stamp()
    assert len(diskcache.code_stamp()) == 12


def test_unwritable_folder_still_answers(tmp_path: Path) -> None:
    blocker = tmp_path / "file"  # a file where the folder should be (root writes anywhere else)
    blocker.write_text("")
    folder = blocker / "ui-cache"
    assert DiskCache(folder).get(_info(), "flame", lambda: b"fresh") == b"fresh"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.fixture()
def store_path(tmp_path: Path) -> Path:
    store, _ = make_store(tmp_path)
    return store.root


def test_fresh_server_reads_the_kept_flame_graph(store_path: Path) -> None:
    first = Api(Store(store_path), []).get("/api/runs/2/flame", {})
    (kept,) = (store_path / "ui-cache").glob("run2-flame-*.bin")
    assert kept.read_bytes() == first.body
    kept.write_bytes(first.body[:-2] + b"\x07\x00")  # a marked copy: the next server sends it
    again = Api(Store(store_path), []).get("/api/runs/2/flame", {})
    assert again.body.endswith(b"\x07\x00")
    filtered = Api(Store(store_path), []).get("/api/runs/2/flame", {"state": ["mutex"]})
    assert filtered.status == 200 and not filtered.body.endswith(b"\x07\x00")


def test_top_kept_and_served(store_path: Path) -> None:
    first = Api(Store(store_path), []).get("/api/runs/2/top", {})
    (kept,) = (store_path / "ui-cache").glob("run2-top-function-*.bin")
    assert kept.read_bytes() == first.body
    assert json.loads(first.body)["rows"][0]["function"] == "compute_hot"
    kept.write_bytes(first.body.replace(b'"compute_hot"', b'"kept"', 1))
    again = json.loads(Api(Store(store_path), []).get("/api/runs/2/top", {}).body)
    assert again["rows"][0]["function"] == "kept"
    assert not list((store_path / "ui-cache").glob("run2-top-line-*"))
    Api(Store(store_path), []).get("/api/runs/2/top", {"state": ["mutex"]})
    assert len(list((store_path / "ui-cache").glob("run2-top-*"))) == 1  # filtered: not kept


def test_run_facts_kept_and_served(store_path: Path) -> None:
    run = json.loads(Api(Store(store_path), []).get("/api/runs/2", {}).body)
    (kept,) = (store_path / "ui-cache").glob("run2-facts-*.bin")
    assert json.loads(kept.read_bytes()) == {"threads": run["threads"], "states": run["states"]}
    assert run["states"] == ["mutex", "running"]


def test_an_imported_run_has_its_pages_kept_before_any_server_asks(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    folded = Path(__file__).resolve().parents[1] / "fixtures" / "hot.folded"
    perfsleuth(store_path, "import", str(folded))
    kept = {p.name.split("-")[1]: p for p in (store_path / "ui-cache").glob("run1-*.bin")}
    assert sorted(kept) == ["facts", "flame", "top"]
    marked = kept["flame"].read_bytes()[:-2] + b"\x07\x00"
    kept["flame"].write_bytes(marked)  # a fresh server sends the kept file, not a new fold
    assert Api(Store(store_path), []).get("/api/runs/1/flame", {}).body == marked


def test_a_perf_recording_has_its_time_order_kept_as_it_is_stored(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    recording = Path(__file__).resolve().parents[1] / "fixtures" / "detect.perf.data"
    perfsleuth(store_path, "import", str(recording))
    (kept,) = (store_path / "ui-cache").glob("run1-timeline-*.bin")
    answer = kept.read_bytes()
    kept.unlink()  # computed anew by a fresh server: the same bytes
    assert Api(Store(store_path), []).get("/api/runs/1/timeline", {}).body == answer
    assert len(answer) > 32
