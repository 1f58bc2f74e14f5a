"""One schema: the API's documents validate against the JSON Schema generated from their
Python types (views/documents.py), and the generated TypeScript and schema are current."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
from uistore import make_store

from perfsleuth.server.api import Api
from perfsleuth.views.keys import GROUPINGS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "documents.schema.json").read_text())


def generator():
    spec = importlib.util.spec_from_file_location(
        "gen_documents", ROOT / "scripts" / "gen_documents.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    store, _ = make_store(tmp_path_factory.mktemp("schema"))
    return Api(store, [])


def valid(doc: object, name: str) -> None:
    jsonschema.validate(doc, {**SCHEMA, "$ref": f"#/$defs/{name}"})


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/api/runs/2", {}, "RunDetail"),
        ("/api/runs/2/top", {"by": "line"}, "TopDoc"),
        ("/api/runs/2/threads", {}, "ThreadsDoc"),
        ("/api/runs/2/callgraph", {"function": "compute_hot"}, "CallGraphDoc"),
        ("/api/runs/2/annotate", {"function": "compute_hot"}, "AnnotateDoc"),
        ("/api/runs/2/source", {"file": "src/engine.cc"}, "SourceFile"),
        ("/api/runs/2/findings", {}, "Advice"),
        ("/api/diff", {"a": "1", "b": "2"}, "DiffDoc"),
        ("/api/choices", {}, "Choices"),
    ],
)
def test_api_documents_follow_the_schema(api: Api, path: str, params: dict, name: str) -> None:
    response = api.get(path, {k: [v] for k, v in params.items()})
    assert response.status == 200
    valid(json.loads(response.body), name)


def test_run_list_follows_the_schema(api: Api) -> None:
    for run in json.loads(api.get("/api/runs", {}).body):
        valid(run, "RunSummary")


def test_a_wrong_document_fails(api: Api) -> None:
    doc = json.loads(api.get("/api/runs/2/top", {}).body)
    doc["rows"][0]["self"] = "12%"
    with pytest.raises(jsonschema.ValidationError):
        valid(doc, "TopDoc")


def test_choices_are_the_python_lists(api: Api) -> None:
    choices = json.loads(api.get("/api/choices", {}).body)
    assert choices["groupings"] == list(GROUPINGS)
    top = choices["fleet_top_groupings"]
    assert top[: len(GROUPINGS)] == list(GROUPINGS) and "library" in top
    assert set(choices["label_groupings"]) <= set(top)
    assert choices["states"][-1] == "unknown" and "running" in choices["states"]


def test_generated_files_are_current() -> None:
    assert generator().main(["--check"]) == 0
