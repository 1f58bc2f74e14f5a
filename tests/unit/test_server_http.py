"""The HTTP layer: token, Host check, static files, read-only API, serve's refusals."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from held_connections import closed_by_server
from uistore import make_store

from perfsleuth.cli import main
from perfsleuth.server import httpd
from perfsleuth.server.api import Api
from perfsleuth.server.httpd import LIMITS
from perfsleuth.views.annotate import find_source
from perfsleuth.web.app import Limits
from perfsleuth.web.guard import guarded_protocol
from perfsleuth.web.run import bind

TOKEN = "s3cret-token"


def _serve(api: Api, token: str | None, static: Path, limits: Limits = LIMITS) -> Iterator[int]:
    """serve's app under uvicorn as web.run.serve configures it, in a thread."""
    app = httpd.create(api, token, loopback=True, static=static)
    sock = bind("127.0.0.1", 0, limits)
    config = uvicorn.Config(app, log_config=None, lifespan="off", http=guarded_protocol(limits))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


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
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_api_and_ui_on_loopback(open_port: int) -> None:
    status, headers, body = request(open_port, "/api/runs")
    assert status == 200
    assert [r["id"] for r in json.loads(body)] == ["2", "1"]
    assert "default-src 'self'" in headers["content-security-policy"]
    status, headers, body = request(open_port, "/")
    assert status == 200 and b"<title>ui</title>" in body
    assert headers["content-type"] == "text/html; charset=utf-8"


@pytest.mark.parametrize("port", ["open_port", "token_port"])
@pytest.mark.parametrize("path", ["/api/runs", f"/api/runs?token={TOKEN}", "/"])
def test_foreign_host_header_is_refused_on_loopback_token_or_not(
    request_fixture: pytest.FixtureRequest, port: str, path: str
) -> None:
    """DNS rebinding: a page of attacker.example resolving to 127.0.0.1 reads nothing."""
    got, _, body = request(
        request_fixture.getfixturevalue(port), path, {"Host": "attacker.example:80"}
    )
    assert got == 403
    assert b"attacker.example" in body and b"127.0.0.1" in body


@pytest.fixture
def request_fixture(request: pytest.FixtureRequest) -> pytest.FixtureRequest:
    return request


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
        (f"/api/runs/2/top?by=dso&token={TOKEN}", {"Host": "localhost:1"}, 200),
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
    assert find_source("src/a.c", [root]) == (root / "src" / "a.c").resolve()
    assert find_source(str(root / "src" / "a.c"), [root]) is not None
    for name in ("../secret.c", "src/../../secret.c", "src/link.c", "src/dir/secret.c"):
        assert find_source(name, [root]) is None, name
    assert find_source(str(tmp_path / "secret.c"), [root]) is None


def test_serve_with_an_empty_token_keeps_the_host_check(tmp_path: Path) -> None:
    """`serve --token ''` is serve without a token: loopback only, Host checked."""
    status = main(["serve", "--host", "0.0.0.0", "--token", "", "--store", str(tmp_path)])
    assert status == 2


def test_disconnects_and_half_open_connections(
    api: Api, static: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Clients that leave, or connect and never finish a request, cost no traceback, and
    past max_idle waiting connections the oldest are closed, so a new request is answered."""
    limits = Limits(max_idle=8, header_timeout_s=30)
    for port in _serve(api, None, static, limits):
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
        for i, conn in enumerate(held):
            conn.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127" if i % 2 else b"")
        status, _, body = request(port, "/api/runs")
        assert status == 200 and json.loads(body)
        assert closed_by_server(held, 40 - limits.max_idle) >= 40 - limits.max_idle
        for conn in held:
            conn.close()
        for _ in range(20):
            conn = socket.create_connection(("127.0.0.1", port), timeout=10)
            conn.sendall(b"GET /api/runs/latest/flame HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            conn.close()
        assert request(port, "/api/runs")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err


class _Transport:
    """What a connection's transport was asked to send, write by write."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def writelines(self, parts: tuple[bytes, ...]) -> None:
        self.sent.append(b"".join(parts))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


class _Cycle:
    def __init__(self) -> None:
        self.transport = _Transport()
        self.response_started = False


def test_an_answer_head_goes_out_with_its_body_in_one_write() -> None:
    from perfsleuth.web.guard import _HeadWithBody

    cycle = _Cycle()
    sent = cycle.transport.sent
    held = _HeadWithBody(cycle)
    held.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the answer: at once
    cycle.response_started = True
    held.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert sent == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    held.write(b"body")
    held.write(b"more")
    assert sent[1:] == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"more"]
    assert not held.is_closing()  # the rest is the transport's

    for end in ("flush", "close"):  # a head without a body (HEAD), or the app failed
        cycle = _Cycle()
        held = _HeadWithBody(cycle)
        cycle.response_started = True
        held.write(b"HTTP/1.1 200 OK\r\n\r\n")
        getattr(held, end)()
        assert cycle.transport.sent == [b"HTTP/1.1 200 OK\r\n\r\n"]
        assert cycle.transport.closed == (end == "close")


def test_answers_on_one_kept_connection_head_requests_included(open_port: int) -> None:
    con = http.client.HTTPConnection("127.0.0.1", open_port, timeout=10)
    try:
        for method in ("GET", "HEAD", "GET", "HEAD"):
            con.request(method, "/api/runs")
            response = con.getresponse()
            body = response.read()
            assert response.status == 200
            assert int(response.getheader("content-length")) > 0
            assert (json.loads(body)[0]["id"] == "2") if method == "GET" else body == b""
    finally:
        con.close()
