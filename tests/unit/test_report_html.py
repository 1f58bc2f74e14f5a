"""The single-file report: built UI inlined, API answers embedded, nothing can break out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from uistore import HOSTILE, make_store

from perfsleuth.errors import UserError
from perfsleuth.present.html import ui_page
from perfsleuth.server import bundle
from perfsleuth.server.api import Api

INDEX = (
    "<!doctype html><html><head><title>perfsleuth</title>"
    '<script type="module" crossorigin src="./assets/index-x.js"></script>'
    '<link rel="stylesheet" crossorigin href="./assets/style-x.css"></head>'
    "<body><main id=app></main></body></html>"
)


@pytest.fixture(scope="module")
def static(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    (root / "assets").mkdir()
    (root / "index.html").write_text(INDEX)
    (root / "assets" / "index-x.js").write_text('const end = "</script>"; console.log(end);')
    (root / "assets" / "style-x.css").write_text("main { color: red }")
    return root


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict:
    store, _ = make_store(tmp_path_factory.mktemp("report"))
    return bundle.collect(Api(store, []), 2, compare=1)


def test_collect_embeds_the_pages_of_one_run(data: dict) -> None:
    docs = data["docs"]
    assert data["start"] == "#/compare?a=1&b=2"
    for key in (
        "/api/runs/2",
        "/api/runs/2/top?by=line",
        "/api/runs/2/findings",
        "/api/runs/2/callgraph?function=compute_hot",
        "/api/runs/2/annotate?function=compute_hot",
        "/api/runs/2/source?file=src/engine.cc",
        "/api/diff?a=1&b=2&by=function",
    ):
        assert key in docs, key
    assert set(data["blobs"]) == {"/api/runs/2/flame", "/api/diff/flame?a=1&b=2"}
    assert "/api/runs/2/source?file=src/leak.cc" in docs
    assert docs["/api/runs/2/source?file=src/leak.cc"]["found"] is False


def test_missing_sources_names_the_files_not_embedded(data: dict) -> None:
    # src/leak.cc is a symlink out of the source root: never served, so not embedded.
    assert bundle.missing_sources(data) == ["src/leak.cc"]


def test_request_key_sorts_parameters() -> None:
    assert bundle.request_key("/api/diff", {"b": "2", "a": "1"}) == "/api/diff?a=1&b=2"
    assert bundle.request_key("/api/runs", {}) == "/api/runs"


def test_html_inlines_assets_and_escapes_data(data: dict, static: Path) -> None:
    page = ui_page(data, static)
    assert 'src="./assets' not in page and "<link" not in page
    assert "<style>main { color: red }</style>" in page
    assert 'http-equiv="Content-Security-Policy"' in page
    # Only the two closing tags of our own scripts: no name closes one early.
    assert page.count("</script>") == 2
    payload = re.search(r'id="perfsleuth-data">(.*?)</script>', page, re.S)
    assert payload
    embedded = json.loads(payload.group(1))
    assert HOSTILE in json.dumps(embedded["docs"]["/api/runs/2/top?by=function"])


def test_html_needs_a_built_ui(data: dict, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="make ui"):
        ui_page(data, tmp_path)


def test_flame_page_alone_embeds_its_filtered_graph(tmp_path: Path) -> None:
    """`flame --html`: the UI's flame page, its filters in the start address and the key."""
    store, _ = make_store(tmp_path)
    data = bundle.collect_flame(Api(store, []), 2, ["mutex", "running"], [201])
    assert data["start"] == "#/run/2/flame?state=mutex&state=running&thread=201"
    assert set(data["blobs"]) == {"/api/runs/2/flame?state=mutex,running&thread=201"}
    assert set(data["docs"]) == {"/api/runs/2", "/api/runs", "/api/choices"}
    assert [r["id"] for r in data["docs"]["/api/runs"]] == ["2"]
