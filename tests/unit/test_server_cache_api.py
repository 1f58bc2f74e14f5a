"""/api/runs/RUN/cache: the document `perfsleuth cache show --format json` prints, or a
404 JSON error for a run without cache projections."""

from __future__ import annotations

import json

import pytest
from uistore import make_store

from perfsleuth.cli import main
from perfsleuth.model.cpu_cache import CacheProjections
from perfsleuth.server.api import Api
from perfsleuth.server.bundle import collect
from perfsleuth.store.runs import Store

CACHE_RUN = 2
PLAIN_RUN = 1


def projection(function: str, hot: list[str]) -> dict:
    """The parts of a recorded projection the UI draws (the recorder writes more)."""
    return {
        "function": function,
        "executable": "/usr/bin/app",
        "footprint": {},
        "layout": {"available": True, "struct": "conn", "lines": [{"line": 0, "hot_fields": hot}]},
        "model": {},
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store, _sources = make_store(tmp_path_factory.mktemp("cache-api"))
    kind = CacheProjections.KIND
    store.put_document(CACHE_RUN, kind, "parse_input", projection("parse_input", []))
    store.put_document(CACHE_RUN, kind, "compute_hot", projection("compute_hot", ["a"]))
    return store


def get(api: Api, path: str, **params: str) -> tuple[int, dict]:
    response = api.get(path, {k: [v] for k, v in params.items()})
    assert response.content_type.startswith("application/json")
    return response.status, json.loads(response.body)


def test_endpoint_serves_what_cache_show_prints(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    status, doc = get(Api(store, []), f"/api/runs/{CACHE_RUN}/cache")
    assert status == 200
    shown = main(["cache", "show", str(CACHE_RUN), "--store", str(store.root), "--format", "json"])
    assert shown == 0
    assert doc == json.loads(capsys.readouterr().out)
    assert [f["function"] for f in doc["functions"]] == ["compute_hot", "parse_input"]
    assert doc["functions"][0]["layout"]["lines"][0]["hot_fields"] == ["a"]


def test_run_without_cache_data_is_a_404_json_error(store: Store) -> None:
    status, doc = get(Api(store, []), f"/api/runs/{PLAIN_RUN}/cache")
    assert status == 404
    assert doc == {
        "error": f"run {PLAIN_RUN} has no cache projections; record one with "
        "`perfsleuth record --mode cache --function FUNC -- CMD`"
    }


def test_unknown_run_and_parameters_are_refused(store: Store) -> None:
    api = Api(store, [])
    status, doc = get(api, "/api/runs/99/cache")
    assert status == 404 and "no run '99'" in doc["error"]
    status, doc = get(api, f"/api/runs/{CACHE_RUN}/cache", function="x")
    assert status == 400 and "unknown parameter 'function'" in doc["error"]


def test_run_detail_counts_the_traced_functions(store: Store) -> None:
    api = Api(store, [])
    assert get(api, f"/api/runs/{CACHE_RUN}")[1]["cache_functions"] == 2
    assert get(api, f"/api/runs/{PLAIN_RUN}")[1]["cache_functions"] == 0


def test_report_embeds_the_cache_document_of_a_cache_run(store: Store) -> None:
    api = Api(store, [])
    assert f"/api/runs/{CACHE_RUN}/cache" in collect(api, CACHE_RUN, None)["docs"]
    assert f"/api/runs/{PLAIN_RUN}/cache" not in collect(api, PLAIN_RUN, None)["docs"]
