"""/api/runs/N/disasm: the machine code of a function's hot lines over HTTP's API,
and the single-file report embedding it for the functions it annotates."""

from __future__ import annotations

import json

import pytest
from asm_binary import HOT_LINE, build, profile

from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.server.api import Api
from perfsleuth.server.bundle import collect, request_key
from perfsleuth.store.runs import Store


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    base = tmp_path_factory.mktemp("disasm")
    binary = build(base)
    store = Store(base / "store")
    store.add_run(RunInfo(command=str(binary)), Recording(profile(binary)))
    store.add_run(RunInfo(command=str(binary)), Recording(profile(binary, build_id="ab" * 20)))
    return Api(store, [])


def get(api: Api, path: str, **params: str) -> tuple[int, dict]:
    response = api.get(path, {k: [v] for k, v in params.items()})
    return response.status, json.loads(response.body)


def test_hot_lines_with_instructions(api: Api) -> None:
    status, doc = get(api, "/api/runs/1/disasm", function="mix")
    assert status == 200
    assert doc["run"] == "1" and doc["function"] == "mix" and doc["reason"] is None
    assert doc["lines"][0]["line"] == HOT_LINE
    first = doc["lines"][0]["instructions"][0]
    assert isinstance(first["address"], int) and first["text"] and first["symbol"] == "work"


def test_a_changed_binary_is_a_reason_not_an_error(api: Api) -> None:
    status, doc = get(api, "/api/runs/2/disasm", function="mix")
    assert status == 200
    assert doc["lines"] == [] and "changed since the run" in doc["reason"]


@pytest.mark.parametrize(
    ("params", "status", "error"),
    [
        ({}, 400, "missing parameter function=NAME"),
        ({"function": "nowhere"}, 404, "no function 'nowhere' in this run"),
        ({"function": "mix", "line": "4"}, 400, "unknown parameter 'line'"),
    ],
)
def test_bad_requests(api: Api, params: dict, status: int, error: str) -> None:
    got, doc = get(api, "/api/runs/1/disasm", **params)
    assert got == status
    assert doc["error"].startswith(error)


def test_the_report_embeds_the_code_of_the_functions_it_annotates(api: Api) -> None:
    docs = collect(api, 1, None)["docs"]
    key = request_key("/api/runs/1/disasm", {"function": "mix"})
    assert docs[key]["lines"][0]["line"] == HOT_LINE
    assert request_key("/api/runs/1/annotate", {"function": "mix"}) in docs
