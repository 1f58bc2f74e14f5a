"""The Starlette app every perfsleuth HTTP entry point is built on: auth, Host check, body limits.

- Bearer tokens: `Authorization: Bearer T`, compared in constant time against every
  configured token; with no token configured, only a loopback listener may run
  (run.serve refuses the rest), and requests need none.
- Host check on loopback listeners, token or not: a browser page on another site must
  not reach the service through DNS rebinding.
- read_body(): the request body streamed up to a size limit (413 past it), within a
  time limit (408), gzip Content-Encoding inflated up to its own limit (413).
- A client that goes away mid-request ends its request quietly, without a traceback.
"""

from __future__ import annotations

import hmac
import ipaddress
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
DRAIN_FACTOR = 4  # see read_body
# Paths open without a token: they reveal nothing but that the service is up.
OPEN_PATHS = frozenset({"/healthz"})


@dataclass(frozen=True)
class Limits:
    """Bounds of one request and of the server (run.serve and web.guard use the rest)."""

    max_body: int = 32 << 20
    max_inflated: int = 256 << 20
    read_timeout_s: float = 30.0
    concurrency: int = 64
    keep_alive_s: float = 5.0
    backlog: int = 512
    max_idle: int = 64  # connections waiting for a request (web.guard)
    header_timeout_s: float = 10.0
    # A connection just accepted may have its request in the socket already: it counts
    # as idle (and may be closed past max_idle) only after waiting this long.
    idle_grace_s: float = 1.0


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(
    routes: Sequence[BaseRoute],
    *,
    tokens: Sequence[str],
    loopback: bool,
    limits: Limits,
) -> Starlette:
    """An app serving `routes` behind the Host check (loopback only) and the token check."""
    middleware = [Middleware(_TokenCheck, tokens=tuple(tokens))]
    if loopback:
        middleware.insert(0, Middleware(_HostCheck))
    app = Starlette(
        routes=list(routes),
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, ClientDisconnect: _gone},
    )
    app.state.limits = limits
    return app


async def read_body(request: Request) -> bytes:
    """The request body, bounded in size and time, gzip Content-Encoding inflated."""
    limits: Limits = request.app.state.limits
    # A body past the limit is still read, and dropped, up to DRAIN_FACTOR times the
    # limit: a client that sends its whole body before it reads (urllib, most agents)
    # then gets the 413 instead of a reset connection, and does not retry what will
    # never fit. Past that the connection is simply answered and closed.
    drain_limit = DRAIN_FACTOR * limits.max_body
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > drain_limit:
        raise _too_large(limits.max_body)
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(limits.read_timeout_s) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > drain_limit:
                break
            if size <= limits.max_body:
                chunks.append(chunk)
    if size > limits.max_body:
        raise _too_large(limits.max_body)
    if scope.cancelled_caught:
        raise HTTPException(408, f"the body did not arrive within {limits.read_timeout_s:g} s")
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").lower()
    if encoding == "gzip":
        return _inflate(body, limits.max_inflated)
    if encoding != "identity":
        raise HTTPException(415, f"Content-Encoding {encoding[:40]} is not supported: use gzip")
    return body


def _inflate(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise HTTPException(400, f"the gzip body is broken ({e})") from e
    if len(out) > limit:
        raise HTTPException(413, f"the gzip body inflates past the limit of {_mb(limit)}")
    if not inflater.eof:
        raise HTTPException(400, "the gzip body is truncated")
    return out


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"the body is larger than the limit of {_mb(limit)}")


def _mb(size: int) -> str:
    return f"{size / (1 << 20):g} MB"


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return PlainTextResponse(exc.detail + "\n", status_code=exc.status_code, headers=exc.headers)


async def _gone(request: Request, exc: Exception) -> Response:
    # Nobody reads this answer: the client has left. 499 is what proxies log for it.
    return Response(status_code=499)


class _TokenCheck:
    def __init__(self, app: ASGIApp, tokens: tuple[str, ...]) -> None:
        self.app = app
        self.tokens = tuple(t.encode() for t in tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.tokens or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._allowed(_header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        answer = PlainTextResponse(
            "missing or wrong token: send Authorization: Bearer TOKEN\n",
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await answer(scope, receive, send)

    def _allowed(self, header: bytes) -> bool:
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        # Every token is compared, so the time taken says nothing about which matched.
        matches = [hmac.compare_digest(given.strip(), token) for token in self.tokens]
        return any(matches)


class _HostCheck:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host").decode("latin-1")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if is_loopback(name):
            await self.app(scope, receive, send)
            return
        answer = PlainTextResponse(
            f"Host {host[:80]!r} is not this loopback service: use http://127.0.0.1:PORT/\n",
            status_code=403,
        )
        await answer(scope, receive, send)


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return b""
