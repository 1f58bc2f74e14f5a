"""POST /api/runs/N/advise over real HTTP (serve's app under uvicorn): the advisor runs
in the background, GET /api/runs/N/advise tells how it goes, and the findings page then
shows the stored findings; a POST needs the X-Perfsleuth header and the token."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_http import TOKEN, _serve, request
from uistore import make_store

from perfsleuth.server.advise_jobs import AdviseJobs
from perfsleuth.server.api import Api

AUTH = {"Authorization": f"Bearer {TOKEN}"}
POST = {**AUTH, "X-Perfsleuth": "1"}
NOT_ADVISED = "1"  # uistore stores findings for run 2 only


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    base = tmp_path_factory.mktemp("advise")
    store, _ = make_store(base)
    static = base / "static"
    static.mkdir()
    (static / "index.html").write_text("<!doctype html><title>ui</title>")
    yield from _serve(Api(store, []), TOKEN, static)


def get(port: int, path: str) -> dict:
    status, _, body = request(port, path, AUTH)
    assert status == 200, body
    return json.loads(body)


def test_a_post_without_the_header_or_token_is_refused(port: int) -> None:
    path = f"/api/runs/{NOT_ADVISED}/advise"
    status, _, body = request(port, path, AUTH, method="POST")
    assert status == 403 and "X-Perfsleuth" in json.loads(body)["error"]
    status, _, _ = request(port, path, {"X-Perfsleuth": "1"}, method="POST")
    assert status == 401
    status, _, _ = request(port, path, {**POST, "Host": "attacker.example:80"}, method="POST")
    assert status == 403
    assert get(port, path) == {"state": "idle", "error": ""}
    assert get(port, f"/api/runs/{NOT_ADVISED}/findings")["advised"] is False


def test_advising_from_the_page_stores_the_findings(port: int) -> None:
    path = f"/api/runs/{NOT_ADVISED}/advise"
    assert get(port, f"/api/runs/{NOT_ADVISED}/findings")["advised"] is False
    status, _, body = request(port, path, POST, method="POST")
    assert status == 202 and json.loads(body)["state"] in ("running", "done")
    deadline = time.monotonic() + 300  # a bound for a loaded machine, not a measurement
    while (state := get(port, path))["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state == {"state": "done", "error": ""}
    advice = get(port, f"/api/runs/{NOT_ADVISED}/findings")
    assert advice["advised"] is True and advice["findings"]


def test_a_missing_run_is_one_line(port: int) -> None:
    status, _, body = request(port, "/api/runs/99/advise", POST, method="POST")
    assert status == 404
    assert "\n" not in json.loads(body)["error"]


def test_other_posts_stay_read_only(port: int) -> None:
    status, _, body = request(port, "/api/runs/1/findings", POST, method="POST")
    assert status == 405 and "read-only" in json.loads(body)["error"]


def test_a_failure_is_kept_as_one_line(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path)
    jobs = AdviseJobs(store, [tmp_path / "no-such-source-root"])
    assert jobs.start(int(NOT_ADVISED)).state == "running"
    deadline = time.monotonic() + 300  # a bound for a loaded machine, not a measurement
    while (state := jobs.state(int(NOT_ADVISED))).state == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert state.state == "failed"
    assert "no-such-source-root" in state.error and "\n" not in state.error
    assert store.documents(int(NOT_ADVISED), "findings") == {}  # nothing half-stored
