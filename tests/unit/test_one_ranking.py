"""One ranking per run: `advise`'s text and JSON and the web API's findings show the same
order, the same gains and the same hidden findings (rank.advice, computed once per answer
from the same findings: the server no longer sorts them itself)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from uistore import make_store

from perfsleuth import advisor
from perfsleuth.cli import main
from perfsleuth.model.findings import Finding
from perfsleuth.server.api import Api
from perfsleuth.store.runs import Store


def fixed_findings() -> list[Finding]:
    estimated = Finding("lib.a", "library-replacement", "estimated only", 0.5, 0.1, 0.7, "swap")
    measured = Finding("alloc.b", "allocator", "measured win", 0.4, 0.01, 0.8, "mimalloc")
    measured.verified = {"ratio": 1.5, "ci95": [1.4, 1.6], "runs": 10, "verdict": "faster"}
    same = Finding("alloc.c", "allocator", "measured nothing", 0.4, 0.3, 0.8, "jemalloc")
    same.verified = {"ratio": 1.2, "ci95": [0.9, 1.6], "runs": 10, "verdict": "same"}
    tiny = Finding("lib.d", "library-replacement", "below the floor", 0.002, 0.001, 0.9, "no")
    return [estimated, measured, same, tiny]


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store, _ = make_store(tmp_path)
    monkeypatch.setattr(advisor, "discover", lambda: {"fixed": lambda ctx: fixed_findings()})
    return store.root


def test_text_json_and_api_agree(store_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["advise", "2", "--store", str(store_root), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    main(["advise", "2", "--store", str(store_root), "--format", "text"])
    text = capsys.readouterr().out
    api = json.loads(Api(Store(store_root), []).get("/api/runs/2/findings", {}).body)

    order = [(f["title"], f["gain"], f["gain_measured"]) for f in doc["findings"]]
    assert order == [("measured win", 1 - 1 / 1.5, True), ("estimated only", 0.1, False)]
    assert [(f["title"], f["gain"], f["gain_measured"]) for f in api["findings"]] == order
    hidden = {f["title"]: f["hidden_because"] for f in doc["hidden_findings"]}
    assert {f["title"]: f["hidden_because"] for f in api["hidden_findings"]} == hidden
    assert set(hidden) == {"measured nothing", "below the floor"}

    rows = re.findall(r"^(\d+)\s+(\S+)\s+\S+\s+\S+\s+(.+?)\s+\[", text, re.MULTILINE)
    assert rows == [("1", "33.3%*", "measured win"), ("2", "10.0%", "estimated only")]
    assert "16.7%" not in text  # the "same" verdict's ratio is not a gain
    assert "2 finding(s) hidden (1 below the noise floor, 1 measured no difference)" in text
