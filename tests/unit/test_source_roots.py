"""Source roots are explicit (issue 19, item 8): an imported run reads no file from the
folder it was imported in; only --src, or the working directory of `record`/`run` of
the user's own command, serves source files."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from secret_import import SECRET, import_secret_run

from perfsleuth.cli import main
from perfsleuth.server.api import Api
from perfsleuth.store.runs import Store


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(home)
    import_secret_run(home)
    return home


def test_imported_run_serves_no_file_from_where_it_was_imported(imported: Path) -> None:
    api = Api(Store(imported / "store"), [])
    for name in (".ssh/id_rsa", str(imported / ".ssh" / "id_rsa")):
        response = api.get("/api/runs/latest/source", {"file": [name]})
        doc = json.loads(response.body)
        assert response.status == 200 and doc["found"] is False, doc
        assert doc["root"] is None and SECRET not in response.body.decode()
    annotated = api.get("/api/runs/latest/annotate", {"function": ["steal"]}).body.decode()
    assert SECRET not in annotated


def test_annotate_of_an_imported_run_reads_nothing_unasked(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report` of the same run: tests/integration/test_report_source_roots.py (it needs
    the built web UI)."""
    for function in ("steal", "main"):
        assert main(["annotate", function, "--store", "store", "--format", "json"]) == 0
        out = capsys.readouterr().out
        assert SECRET not in out and '"path": null' in out


def test_src_is_the_explicit_root_and_the_api_names_it(imported: Path) -> None:
    api = Api(Store(imported / "store"), [imported])
    doc = json.loads(api.get("/api/runs/latest/source", {"file": [".ssh/id_rsa"]}).body)
    assert doc["found"] is True
    assert doc["root"] == str(imported.resolve())
    assert doc["path"] == str((imported / ".ssh" / "id_rsa").resolve())


def test_a_recorded_run_reads_its_working_directory(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file named by a run of the user's own command: its cwd is a root."""
    store = Store(imported / "store")
    con = duckdb.connect(str(store.db))
    con.execute("UPDATE runs SET source = 'record'")
    con.close()
    doc = json.loads(Api(store, []).get("/api/runs/latest/source", {"file": [".ssh/id_rsa"]}).body)
    assert doc["found"] is True and doc["root"] == str(imported)
