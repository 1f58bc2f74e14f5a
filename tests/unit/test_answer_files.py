"""The web UI's answers (flame graphs, TopN, run facts) kept as files in the store's
answers/ folder: a fresh server reads them, never stale; `record` keeps them and `import`
its TopN without the server's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import perfsleuth
from uistore import make_store

from perfsleuth.model.run import RunInfo
from perfsleuth.server.api import Api
from perfsleuth.store import answers
from perfsleuth.store.answers import AnswerFiles
from perfsleuth.store.runs import Store


def _info(run_id: int = 1, started: float = 1000.0) -> RunInfo:
    info = RunInfo(command="x", started=started)
    info.id = run_id
    return info


def test_computed_once_then_read(tmp_path: Path) -> None:
    kept = AnswerFiles(tmp_path)
    calls: list[int] = []

    def compute() -> bytes:
        calls.append(1)
        return b"payload"

    assert kept.get(_info(), "flame", compute) == b"payload"
    assert AnswerFiles(tmp_path).get(_info(), "flame", compute) == b"payload"
    assert len(calls) == 1
    assert [p.name.startswith("run1-flame-") for p in (tmp_path / "answers").iterdir()] == [True]


def test_the_folder_of_older_stores_is_removed(tmp_path: Path) -> None:
    """ui-cache/ held the same files under a stamp of older code: none could be read."""
    old = tmp_path / "ui-cache"
    old.mkdir()
    (old / "run1-flame-1000000000-s3-0123456789ab.bin").write_bytes(b"old code's")
    assert AnswerFiles(tmp_path).get(_info(), "flame", lambda: b"new") == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers"]


def test_changed_code_or_a_recreated_run_replaces_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = AnswerFiles(tmp_path)
    kept.get(_info(), "flame", lambda: b"old")
    monkeypatch.setattr(answers, "code_stamp", lambda: "edited")
    assert kept.get(_info(), "flame", lambda: b"new code") == b"new code"
    assert kept.get(_info(started=2000.0), "flame", lambda: b"other run") == b"other run"
    assert [p.read_bytes() for p in (tmp_path / "answers").iterdir()] == [b"other run"]


def test_files_no_reader_can_read_go_when_a_run_keeps_an_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name no longer written (count runs kept `counts` before `line-counts`) and any
    name under an older code's stamp; the run's current files and other runs' stay."""
    kept = AnswerFiles(tmp_path)
    monkeypatch.setattr(answers, "code_stamp", lambda: "old")
    kept.keep(_info(), "counts", b"whole counts document")
    kept.keep(_info(), "flame", b"old code's flame")
    kept.keep(_info(run_id=12), "counts", b"another run's")
    monkeypatch.setattr(answers, "code_stamp", lambda: "new")
    kept.keep(_info(), "top", b"top")
    kept.keep(_info(), "line-counts", b"line counts")
    names = sorted(p.name for p in (tmp_path / "answers").iterdir())
    start = f"1000000000-s{answers.SCHEMA_VERSION}"
    assert names == [
        f"run1-line-counts-{start}-new.bin",
        f"run1-top-{start}-new.bin",
        f"run12-counts-{start}-old.bin",
    ]


def test_code_stamp_follows_the_package_files() -> None:
    assert answers.code_stamp() == answers.code_stamp()
    assert len(answers.code_stamp()) == 12


def test_unwritable_folder_still_answers(tmp_path: Path) -> None:
    blocker = tmp_path / "file"  # a file where the folder should be (root writes anywhere else)
    blocker.write_text("")
    assert AnswerFiles(blocker).get(_info(), "flame", lambda: b"fresh") == b"fresh"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.fixture()
def store_path(tmp_path: Path) -> Path:
    store, _ = make_store(tmp_path)
    return store.root


def test_fresh_server_reads_the_kept_flame_graph(store_path: Path) -> None:
    first = Api(Store(store_path), []).get("/api/runs/2/flame", {})
    (kept,) = (store_path / "answers").glob("run2-flame-*.bin")
    assert kept.read_bytes() == first.body
    kept.write_bytes(first.body[:-2] + b"\x07\x00")  # a marked copy: the next server sends it
    again = Api(Store(store_path), []).get("/api/runs/2/flame", {})
    assert again.body.endswith(b"\x07\x00")
    filtered = Api(Store(store_path), []).get("/api/runs/2/flame", {"state": ["mutex"]})
    assert filtered.status == 200 and not filtered.body.endswith(b"\x07\x00")


def test_top_kept_and_served(store_path: Path) -> None:
    first = Api(Store(store_path), []).get("/api/runs/2/top", {})
    (kept,) = (store_path / "answers").glob("run2-top-function-*.bin")
    assert kept.read_bytes() == first.body
    assert json.loads(first.body)["rows"][0]["function"] == "compute_hot"
    kept.write_bytes(first.body.replace(b'"compute_hot"', b'"kept"', 1))
    again = json.loads(Api(Store(store_path), []).get("/api/runs/2/top", {}).body)
    assert again["rows"][0]["function"] == "kept"
    assert not list((store_path / "answers").glob("run2-top-line-*"))
    Api(Store(store_path), []).get("/api/runs/2/top", {"state": ["mutex"]})
    assert len(list((store_path / "answers").glob("run2-top-*"))) == 1  # filtered: not kept


def test_run_facts_kept_and_served(store_path: Path) -> None:
    run = json.loads(Api(Store(store_path), []).get("/api/runs/2", {}).body)
    (kept,) = (store_path / "answers").glob("run2-facts-*.bin")
    assert json.loads(kept.read_bytes()) == {"threads": run["threads"], "states": run["states"]}
    assert run["states"] == ["mutex", "running"]


def test_an_imported_run_keeps_its_top_and_the_first_server_the_other_pages(
    tmp_path: Path,
) -> None:
    store_path = tmp_path / "store"
    folded = Path(__file__).resolve().parents[1] / "fixtures" / "hot.folded"
    perfsleuth(store_path, "import", str(folded))
    kept = {p.name.split("-")[1]: p for p in (store_path / "answers").glob("run1-*.bin")}
    assert sorted(kept) == ["top"]
    Api(Store(store_path), []).keep("latest")  # what `serve` warms at start-up
    kept = {p.name.split("-")[1]: p for p in (store_path / "answers").glob("run1-*.bin")}
    assert sorted(kept) == ["facts", "flame", "top"]
    marked = kept["flame"].read_bytes()[:-2] + b"\x07\x00"
    kept["flame"].write_bytes(marked)  # a fresh server sends the kept file, not a new fold
    assert Api(Store(store_path), []).get("/api/runs/1/flame", {}).body == marked


def test_an_imported_perf_recording_has_its_time_order_kept_by_the_first_server(
    tmp_path: Path,
) -> None:
    store_path = tmp_path / "store"
    recording = Path(__file__).resolve().parents[1] / "fixtures" / "detect.perf.data"
    perfsleuth(store_path, "import", str(recording))
    assert not list((store_path / "answers").glob("run1-timeline-*.bin"))
    Api(Store(store_path), []).keep("latest")
    (kept,) = (store_path / "answers").glob("run1-timeline-*.bin")
    answer = kept.read_bytes()
    kept.unlink()  # computed anew by a fresh server: the same bytes
    assert Api(Store(store_path), []).get("/api/runs/1/timeline", {}).body == answer
    assert len(answer) > 32


def test_storing_a_run_keeps_its_pages_without_the_server(tmp_path: Path) -> None:
    """`record` and `import` keep the pages through views/run_answers.py: the server's
    code (routes, HTTP) is not even loaded."""
    folded = Path(__file__).resolve().parents[1] / "fixtures" / "hot.folded"
    script = (
        "import sys; from perfsleuth.cli import main; "
        f"main(['import', {str(folded)!r}, '--store', {str(tmp_path)!r}]); "
        "print(sorted(m for m in sys.modules if m.startswith('perfsleuth.server')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    assert len(list((tmp_path / "answers").glob("run1-top-function-*.bin"))) == 1


def test_code_stamp_changes_with_any_python_file_of_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "views").mkdir()
    module = tmp_path / "views" / "top.py"
    module.write_text("x = 1\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("not code")
    monkeypatch.setattr(answers, "PACKAGE", tmp_path)
    stamps = []
    try:
        for edit in (lambda: None, lambda: notes.write_text("longer, still not code")):
            edit()
            answers.code_stamp.cache_clear()
            stamps.append(answers.code_stamp())
        module.write_text("x = 22\n")
        answers.code_stamp.cache_clear()
        stamps.append(answers.code_stamp())
    finally:
        answers.code_stamp.cache_clear()  # the next caller's stamp is the real package's
    assert stamps[0] == stamps[1] != stamps[2]
