"""The HTTP layer: token, Host check, static files, read-only API, serve's refusals."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from uistore import make_store

from perfsleuth.cli import main
from perfsleuth.server import sources
from perfsleuth.server.api import Api
from perfsleuth.server.httpd import Server

TOKEN = "s3cret-token"


def _serve(api: Api, token: str | None, static: Path) -> Iterator[int]:
    server = Server(("127.0.0.1", 0), api, token)
    server.static = static
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    store, _ = make_store(tmp_path_factory.mktemp("http"))
    return Api(store, [])


@pytest.fixture(scope="module")
def static(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    (root / "index.html").write_text("<!doctype html><title>ui</title>")
    (root / "assets").mkdir()
    (root / "assets" / "app.js").write_text("console.log(1)")
    (root.parent / "outside.txt").write_text("private")
    return root


@pytest.fixture(scope="module")
def open_port(api: Api, static: Path) -> Iterator[int]:
    yield from _serve(api, None, static)


@pytest.fixture(scope="module")
def token_port(api: Api, static: Path) -> Iterator[int]:
    yield from _serve(api, TOKEN, static)


def request(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    con.request(method, path, headers=headers or {})
    response = con.getresponse()
    body = response.read()
    con.close()
    return response.status, dict(response.getheaders()), body


def test_api_and_ui_on_loopback(open_port: int) -> None:
    status, headers, body = request(open_port, "/api/runs")
    assert status == 200
    assert [r["id"] for r in json.loads(body)] == ["2", "1"]
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    status, headers, body = request(open_port, "/")
    assert status == 200 and b"<title>ui</title>" in body
    assert headers["Content-Type"] == "text/html; charset=utf-8"


def test_foreign_host_header_is_refused_without_token(open_port: int) -> None:
    status, _, body = request(open_port, "/api/runs", {"Host": "attacker.example:80"})
    assert status == 403
    assert "not allowed" in json.loads(body)["error"]


@pytest.mark.parametrize(
    "path",
    ["/../outside.txt", "/assets/../../outside.txt", "/%2e%2e/outside.txt", "//etc/passwd"],
)
def test_static_files_stay_inside_the_build(open_port: int, path: str) -> None:
    status, _, body = request(open_port, path)
    assert status == 404
    assert b"private" not in body and b"root:" not in body


def test_api_is_read_only(open_port: int) -> None:
    status, _, body = request(open_port, "/api/runs", method="POST")
    assert status == 405
    assert "read-only" in json.loads(body)["error"]


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/api/runs", {}, 401),
        ("/api/runs", {"Authorization": "Bearer wrong"}, 401),
        ("/api/runs?token=wrong", {}, 401),
        ("/api/runs", {"Authorization": f"Bearer {TOKEN}"}, 200),
        (f"/api/runs?token={TOKEN}", {}, 200),
        (f"/api/runs/2/top?by=dso&token={TOKEN}", {"Host": "example.org"}, 200),
    ],
)
def test_token_is_checked_on_every_api_request(
    token_port: int, path: str, headers: dict, status: int
) -> None:
    got, _, body = request(token_port, path, headers)
    assert got == status
    if status == 401:
        assert "token" in json.loads(body)["error"]


def test_serve_refuses_public_address_without_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["serve", "--host", "0.0.0.0", "--store", str(tmp_path)])
    assert status == 2
    assert "--token" in capsys.readouterr().err


def test_resolve_inside_rejects_dotdot_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.c").write_text("int a;\n")
    (tmp_path / "secret.c").write_text("secret\n")
    (root / "src" / "link.c").symlink_to(tmp_path / "secret.c")
    (root / "src" / "dir").symlink_to(tmp_path)
    assert sources.resolve_inside("src/a.c", [root]) == (root / "src" / "a.c").resolve()
    assert sources.resolve_inside(str(root / "src" / "a.c"), [root]) is not None
    for name in ("../secret.c", "src/../../secret.c", "src/link.c", "src/dir/secret.c"):
        assert sources.resolve_inside(name, [root]) is None, name
    assert sources.resolve_inside(str(tmp_path / "secret.c"), [root]) is None
