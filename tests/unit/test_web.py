"""web/: tokens, Host check and body limits, driven through the ASGI interface directly."""

from __future__ import annotations

import base64
import gzip
import zlib

import anyio
import cramjam
import lz4.frame
import pytest
import pyzstd
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from perfsleuth.errors import UserError
from perfsleuth.web.app import Limits, create_app, is_loopback, read_body
from perfsleuth.web.run import check_tokens, parse_listen


async def echo(request: Request) -> Response:
    return PlainTextResponse(str(len(await read_body(request))))


def call(
    app,
    body: bytes = b"",
    headers: dict | None = None,
    chunk: int = 1 << 16,
    unread: list[int] | None = None,
    method: str = "POST",
    path: str = "/echo",
    sent: list[dict] | None = None,
):
    """(status, body) of one request (POST /echo), the body sent in chunks as a server
    would; `unread` gets the number of body chunks the app never read, `sent` what the
    app sent."""
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if not any(k == b"host" for k, _ in raw):
        raw.append((b"host", b"127.0.0.1:4040"))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": raw,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 4040),
    }
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]
    sent = [] if sent is None else sent

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    if unread is not None:
        unread.append(len(messages))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


async def fails(request: Request) -> Response:
    """An endpoint's refusal (an HTTPException) for a body "refuse", else a bug."""
    if await read_body(request) == b"refuse":
        raise HTTPException(409, "taken", headers={"X-Why": "a test"})
    raise RuntimeError("a bug")


ENDPOINTS = {"/echo": echo, "/fails": fails}


def app(tokens=(), loopback=True, direct=False, **limits):
    return create_app(
        [Route(path, endpoint, methods=["POST"]) for path, endpoint in ENDPOINTS.items()],
        tokens=tokens,
        loopback=loopback,
        limits=Limits(**limits),
        direct=ENDPOINTS if direct else None,
    )


def test_tokens_any_of_several_and_nothing_else() -> None:
    a = app(tokens=("one", "two"))
    assert call(a)[0] == 401
    assert call(a, headers={"Authorization": "Bearer three"})[0] == 401
    assert call(a, headers={"Authorization": "Basic two"})[0] == 401
    assert call(a, headers={"Authorization": "Bearer two"})[0] == 200
    assert call(app(), headers={})[0] == 200


def test_basic_auth_with_a_token_as_its_password() -> None:
    """Grafana Alloy's basic_auth and the Pyroscope SDKs' (a Grafana Cloud tenant id as
    the user): the password is the token, the user any."""
    a = app(tokens=("one", "two"))

    def basic(credentials: bytes) -> int:
        encoded = base64.b64encode(credentials).decode()
        return call(a, headers={"Authorization": f"Basic {encoded}"})[0]

    assert basic(b"123456:two") == 200
    assert basic(b":one") == 200
    for wrong in (b"123456:three", b"two:", b"two", b"", b"123456:two "):
        assert basic(wrong) == 401, wrong
    assert call(a, headers={"Authorization": "Basic !!!!"})[0] == 401


def test_host_check_on_loopback_only() -> None:
    assert call(app(), headers={"Host": "evil.example:4040"})[0] == 403
    assert call(app(), headers={"Host": "localhost:4040"})[0] == 200
    assert call(app(), headers={"Host": "[::1]:4040"})[0] == 200
    assert (
        call(
            app(loopback=False, tokens=("t",)),
            headers={"Host": "collector.example", "Authorization": "Bearer t"},
        )[0]
        == 200
    )


def test_body_limit_streamed_and_declared() -> None:
    a = app(max_body=1000)
    assert call(a, b"x" * 1000) == (200, b"1000")
    status, answer = call(a, b"x" * 1001, chunk=100)
    assert status == 413 and b"limit of" in answer
    status, _ = call(a, b"x", headers={"Content-Length": "5000"})
    assert status == 413


def test_a_body_past_the_limit_is_read_to_its_end_before_the_413() -> None:
    """So a client that writes its whole body before reading gets the answer, not a
    reset connection; a body past four times the limit is not read any further."""
    a = app(max_body=1000)
    unread: list[int] = []
    status, answer = call(a, b"x" * 3000, chunk=100, unread=unread)
    assert (status, unread) == (413, [0]) and b"limit of" in answer
    status, _ = call(a, b"x" * 8000, chunk=100, unread=unread)
    assert status == 413 and unread[-1] > 0


def snappy_framed(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress(data))


COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "zlib": zlib.compress,
    "zstd": pyzstd.compress,
    "snappy": lambda data: bytes(cramjam.snappy.compress_raw(data)),
    "x-snappy-framed": snappy_framed,
    "lz4": lz4.frame.compress,
}


@pytest.mark.parametrize("encoding", COMPRESS)
def test_compressed_bodies_inflate_within_their_limit(encoding: str) -> None:
    """The OpenTelemetry Collector's exporters send gzip, zstd, deflate, zlib, snappy
    (one block; older ones the framing format) or lz4 (a frame)."""
    a = app(max_inflated=10_000)
    compress, header = COMPRESS[encoding], {"Content-Encoding": encoding}
    assert call(a, compress(b"y" * 10_000), headers=header) == (200, b"10000")
    assert call(a, compress(b"y" * 10_000), headers=header, chunk=7) == (200, b"10000")
    status, answer = call(a, compress(b"y" * 10_001), headers=header)
    assert status == 413 and b"inflates past the limit" in answer
    status, answer = call(a, compress(b"y" * 100)[:-1], headers=header)
    assert status == 400 and encoding.encode() in answer
    status, answer = call(a, b"not compressed at all", headers=header)
    assert status == 400 and b"broken" in answer
    status, answer = call(a, compress(b"y" * (10 << 20)), headers=header)
    assert status == 413 and b"limit of 10,000 bytes" in answer


def test_frames_after_frames_and_unread_encodings() -> None:
    a = app(max_inflated=10_000)
    twice = pyzstd.compress(b"y" * 300) + pyzstd.compress(b"z" * 200)
    assert call(a, twice, headers={"Content-Encoding": "zstd"}) == (200, b"500")
    status, answer = call(a, b"z", headers={"Content-Encoding": "br"})
    assert status == 415 and b"use gzip, zstd, deflate, zlib, snappy" in answer


def test_snappy_as_older_collectors_sent_it_and_its_framing_checked() -> None:
    """`snappy` holding the framing format (older OTel Collectors): told by its stream
    identifier; a chunk's CRC, a reserved chunk type and a missing identifier refused;
    skippable chunks skipped; a stream cut within a chunk is truncated."""
    a = app(max_inflated=200_000)
    data = bytes(range(256)) * 600  # three chunks of at most 64 KiB
    framed = snappy_framed(data)
    for encoding in ("snappy", "x-snappy-framed"):
        assert call(a, framed, headers={"Content-Encoding": encoding}) == (200, b"153600")
    header = {"Content-Encoding": "x-snappy-framed"}
    skippable = b"\x80\x03\x00\x00abc"
    with_skippable = framed[:10] + skippable + framed[10:]
    assert call(a, with_skippable, headers=header, chunk=5) == (200, b"153600")
    corrupt = bytearray(framed)
    corrupt[14] ^= 1  # the first data chunk's CRC
    status, answer = call(a, bytes(corrupt), headers=header)
    assert status == 400 and b"checksum" in answer
    for bad in (framed[10:], framed[:10] + b"\x02\x01\x00\x00x"):
        status, answer = call(a, bad, headers=header)
        assert status == 400 and b"broken" in answer
    first = 14 + int.from_bytes(framed[11:14], "little")  # the identifier and a chunk
    # the format has no end mark: cut between chunks, a shorter stream (the push's own
    # format then tells); cut within one, truncated
    assert call(a, framed[:first], headers=header) == (200, b"65536")
    status, answer = call(a, framed[: first + 5], headers=header)
    assert status == 400 and b"truncated" in answer


def test_listen_addresses_and_tokens() -> None:
    assert parse_listen("127.0.0.1:4040") == ("127.0.0.1", 4040)
    assert parse_listen("[::1]:80") == ("::1", 80)
    for bad in ("4040", "host:port", "h:70000"):
        with pytest.raises(UserError, match="HOST:PORT"):
            parse_listen(bad)
    assert is_loopback("127.0.0.2") and is_loopback("::1") and not is_loopback("0.0.0.0")
    check_tokens("127.0.0.1", [], "x")
    check_tokens("0.0.0.0", ["secret"], "x")
    with pytest.raises(UserError, match="--token"):
        check_tokens("0.0.0.0", [], "x")
    with pytest.raises(UserError, match="empty"):
        check_tokens("127.0.0.1", [" "], "x")


def test_a_gzip_body_is_inflated_as_it_arrives_and_stops_at_the_limit() -> None:
    """A 10 MB bomb against a 10 KB limit: refused, with nothing of it kept."""
    a = app(max_inflated=10_000)
    status, answer = call(a, gzip.compress(b"y" * (10 << 20)), headers={"Content-Encoding": "gzip"})
    assert status == 413 and b"limit of 10,000 bytes" in answer


def test_bodies_held_at_once_are_bounded_but_small_ones_pass() -> None:
    """Past max_buffered a large body is told to retry (503); a small one still passes."""
    a = app(max_buffered=1 << 20)
    status, answer = call(a, b"x" * (2 << 20))
    assert status == 503 and b"limit of 1 MB" in answer
    assert call(a, b"x" * 1000) == (200, b"1000")


def test_slots_count_requests_past_the_token_check() -> None:
    """With one slot held by a request still sending its body, another gets 503 (and a
    Retry-After), a request without the token 401 (it takes no slot), /healthz 200."""
    app_ = create_app(
        [
            Route("/echo", echo, methods=["POST"]),
            Route("/healthz", lambda r: PlainTextResponse("ok"), methods=["GET"]),
        ],
        tokens=["t"],
        loopback=True,
        limits=Limits(concurrency=1),
    )
    answers: dict[str, tuple[int, dict]] = {}

    async def request(name: str, path: str, token: str, hold: anyio.Event | None) -> None:
        headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]
        scope = {
            "type": "http",
            "method": "POST" if path == "/echo" else "GET",
            "path": path,
            "query_string": b"",
            "headers": headers,
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 4040),
        }

        async def receive() -> dict:
            if hold is not None:
                await hold.wait()
            return {"type": "http.request", "body": b"x", "more_body": False}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                answers[name] = (message["status"], dict(message["headers"]))

        await app_(scope, receive, send)

    async def main() -> None:
        hold = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(request, "holder", "/echo", "t", hold)
            await anyio.sleep(0.05)
            await request("second", "/echo", "t", None)
            await request("no token", "/echo", "wrong", None)
            await request("health", "/healthz", "", None)
            hold.set()
        await request("after", "/echo", "t", None)

    anyio.run(main)
    assert answers["second"][0] == 503 and answers["second"][1][b"retry-after"] == b"1"
    statuses = {k: v[0] for k, v in answers.items()}
    assert statuses == {"holder": 200, "second": 503, "no token": 401, "health": 200, "after": 200}


def test_direct_endpoints_answer_as_their_routes() -> None:
    """POSTs to create_app's direct endpoints get what the same endpoints get behind
    Starlette's router: the checks, the limits, their refusals and a bug's 500 (raised
    to the server after it); other methods reach the routes."""
    ok = {"Authorization": "Bearer t"}

    def answers(a) -> list:
        bug: list[dict] = []
        with pytest.raises(RuntimeError, match="a bug"):
            call(a, b"x", headers=ok, path="/fails", sent=bug)
        return [
            call(a, b"x" * 10, headers=ok),
            call(a, headers={"Host": "evil.example", **ok}),
            call(a, headers={"Authorization": "Bearer wrong"}),
            call(a, b"x" * 2000, headers=ok),
            call(a, gzip.compress(b"y" * 100)[:20], headers={"Content-Encoding": "gzip", **ok}),
            call(a, b"refuse", headers=ok, path="/fails"),
            call(a, headers=ok, method="GET"),
            [(m["type"], m.get("status"), m.get("body")) for m in bug],
        ]

    routed = answers(app(tokens=("t",), max_body=1000))
    assert answers(app(tokens=("t",), max_body=1000, direct=True)) == routed
    assert [status for status, _ in routed[:7]] == [200, 403, 401, 413, 400, 409, 405]
    assert routed[5][1] == b"taken\n"
    assert routed[7] == [
        ("http.response.start", 500, None),
        ("http.response.body", None, b"Internal Server Error"),
    ]
    only_direct = create_app([], tokens=(), loopback=True, limits=Limits(), direct=ENDPOINTS)
    assert call(only_direct, b"abc") == (200, b"3")
    assert call(only_direct, method="GET")[0] == 404
