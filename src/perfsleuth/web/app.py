"""The Starlette app every perfsleuth HTTP entry point is built on: auth, Host check, body limits.

- Bearer tokens: `Authorization: Bearer T`, compared in constant time against every
  configured token; or `Authorization: Basic` with T as the password and any user name
  (what Grafana Alloy's pyroscope.write and the Pyroscope SDKs send with basic auth, the
  user a Grafana Cloud tenant id); with no token configured, only a loopback listener may
  run (run.serve refuses the rest), and requests need none.
- Host check on loopback listeners, token or not: a browser page on another site must
  not reach the service through DNS rebinding.
- read_body(): the request body streamed up to a size limit (413 past it), within a
  time limit (408), a compressed body (Content-Encoding gzip, deflate, zlib, zstd, snappy
  or lz4, what the OpenTelemetry Collector's exporters offer: web/inflate.py) inflated as
  it arrives, up to its own limit (413: a bomb is never inflated past it).
- Request slots: at most Limits.concurrency requests are in progress past the token
  check (more get 503); a connection that has not sent a whole request, or whose
  request is refused for its token, takes none (web.guard bounds those). The bodies
  held by the requests in progress are bounded together by Limits.max_buffered (503
  past it, bodies up to SMALL_BODY apart): many large bodies at once cannot exhaust
  memory nor turn small pushes away.
- A client that goes away mid-request ends its request quietly, without a traceback.
- Direct endpoints (create_app's `direct`): POSTs to their paths go straight to their
  endpoint behind the same checks and slots, past Starlette's router and exception
  layers, with the same answers (errors included); their other methods reach the
  routes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from .inflate import INFLATERS, InflatesPast

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
DRAIN_FACTOR = 4  # see read_body
# Paths open without a token: they reveal nothing but that the service is up.
OPEN_PATHS = frozenset({"/healthz"})
# A body up to this size is never refused for the bodies others hold: large bodies at
# once cannot turn away the small pushes of ordinary clients. Slots bound these.
SMALL_BODY = 1 << 20
HELD = "perfsleuth.held"  # the request's _Held, in its ASGI scope

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Limits:
    """Bounds of one request and of the server (run.serve and web.guard use the rest)."""

    max_body: int = 32 << 20  # as it arrives
    max_inflated: int = 256 << 20  # after a compressed Content-Encoding is inflated
    read_timeout_s: float = 30.0  # for the whole body
    concurrency: int = 64  # requests in progress past the token check
    max_buffered: int = 128 << 20  # body bytes held by all the requests in progress
    keep_alive_s: float = 5.0
    backlog: int = 512
    max_idle: int = 64  # connections that have waited for a request past idle_grace_s
    max_waiting: int = 512  # connections waiting for a request, however long (web.guard)
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
    direct: Mapping[str, Endpoint] | None = None,
) -> ASGIApp:
    """An app serving `routes` behind the Host check (loopback only) and the token check;
    POSTs to a path of `direct` answered by its endpoint there (see _Direct)."""
    middleware = [
        Middleware(_TokenCheck, tokens=tuple(tokens)),
        Middleware(_Slots, server=_Server(limits)),
    ]
    if loopback:
        middleware.insert(0, Middleware(_HostCheck))
    app = Starlette(
        routes=list(routes),
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, ClientDisconnect: _gone},
    )
    app.state.limits = limits
    return _Direct(app, direct, middleware) if direct else app


class _Direct:
    """POSTs to the paths of `endpoints` answered by their endpoint, behind the app's
    own middleware (the same checks, the same slots) and with its answers to errors;
    every other request goes to the app. Starlette's router, its two exception layers
    and their wrappers of every send were about a tenth of a small push's event-loop
    time (py-spy)."""

    def __init__(
        self, app: Starlette, endpoints: Mapping[str, Endpoint], middleware: list[Middleware]
    ) -> None:
        self.app = app
        self.endpoints = endpoints
        guarded: ASGIApp = self._answer
        for cls, args, kwargs in reversed(middleware):
            guarded = cls(guarded, *args, **kwargs)
        self.guarded = ServerErrorMiddleware(guarded)  # a 500 as the app answers it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "POST" and scope["path"] in self.endpoints:  # http only
            scope["app"] = self.app  # read_body's limits
            await self.guarded(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        try:
            response = await self.endpoints[scope["path"]](request)
        except HTTPException as e:
            response = await _http_error(request, e)
        except ClientDisconnect as e:
            response = await _gone(request, e)
        await response(scope, receive, send)


class _Server:
    """What the requests in progress hold: slots, and body bytes in memory."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.requests = 0
        self.buffered = 0


class _Held:
    """The body bytes one request holds, charged to the server's max_buffered."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.size = 0

    def charge(self, size: int) -> HTTPException | None:
        """None when `size` more bytes may be held, else the 503 to answer."""
        server = self.server
        past_small = self.size + size > SMALL_BODY
        if past_small and server.buffered + size > server.limits.max_buffered:
            return HTTPException(
                503,
                f"busy: the requests in progress hold {_mb(server.buffered)} of bodies, the "
                f"limit of {_mb(server.limits.max_buffered)}; retry shortly",
                headers={"Retry-After": "1"},
            )
        server.buffered += size
        self.size += size
        return None

    def release(self) -> None:
        self.server.buffered -= self.size
        self.size = 0


class _Slots:
    """At most Limits.concurrency requests at once (503 past it); their bodies' bytes
    held are given back when they end. Open paths (/healthz) take no slot."""

    def __init__(self, app: ASGIApp, server: _Server) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        server = self.server
        if server.requests >= server.limits.concurrency:
            answer = PlainTextResponse(
                f"busy: {server.requests} requests in progress, the limit; retry shortly\n",
                status_code=503,
                headers={"Retry-After": "1"},
            )
            await answer(scope, receive, send)
            return
        held = scope[HELD] = _Held(server)
        server.requests += 1
        try:
            await self.app(scope, receive, send)
        finally:
            server.requests -= 1
            held.release()


async def read_body(request: Request) -> bytes:
    """The request body, bounded in size and time, its Content-Encoding inflated."""
    limits: Limits = request.app.state.limits
    # A body past the limit is still read, and dropped, up to DRAIN_FACTOR times the
    # limit: a client that sends its whole body before it reads (urllib, most agents)
    # then gets the 413 instead of a reset connection, and does not retry what will
    # never fit. Past that the connection is simply answered and closed.
    drain_limit = DRAIN_FACTOR * limits.max_body
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > drain_limit:
        raise _too_large(limits.max_body)
    encoding = request.headers.get("content-encoding", "identity").lower()
    if encoding != "identity" and encoding not in INFLATERS:
        raise HTTPException(
            415,
            f"Content-Encoding {encoding[:40]} is not supported: use gzip, zstd, deflate, "
            "zlib, snappy, x-snappy-framed, lz4 or none",
        )
    held: _Held = request.scope.get(HELD) or _Held(_Server(limits))
    body = _Body(limits, held, encoding)
    size = 0
    late = False
    try:  # asyncio's timeout: anyio's cancel scope was ~3% of a push's event-loop time
        async with asyncio.timeout(limits.read_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > drain_limit:
                    break
                if size <= limits.max_body and body.refused is None:
                    await body.feed(chunk)
    except TimeoutError:
        late = True
    if size > limits.max_body:
        raise _too_large(limits.max_body)
    if not late:
        await body.end()
    if body.refused is not None:
        raise body.refused
    if late:
        raise HTTPException(408, f"the body did not arrive within {limits.read_timeout_s:g} s")
    return body.finish()


class _Body:
    """A body as it arrives, inflated chunk by chunk when it is compressed, so that a
    bomb stops at the limit; every byte kept is charged to the request's _Held. Once
    `refused` is set, nothing more is kept: the rest is drained, then refused."""

    STEP = 1 << 20  # inflated at most at once, between two turns of the event loop

    def __init__(self, limits: Limits, held: _Held, encoding: str) -> None:
        make = INFLATERS.get(encoding)
        self.encoding = encoding
        self.limit = limits.max_body if make is None else limits.max_inflated
        self.held = held
        self.inflater = None if make is None else make(self.limit)
        self.parts: list[bytes] = []
        self.size = 0
        self.refused: HTTPException | None = None

    async def feed(self, chunk: bytes) -> None:
        inflater = self.inflater
        if inflater is None:
            self._keep(chunk)
            return
        data = chunk
        while self.refused is None and not inflater.ended and (data or inflater.held):
            room = self.limit - self.size
            try:
                out = inflater.step(data, min(room + 1, self.STEP))
            except inflater.errors as e:
                self.refused = HTTPException(400, f"the {self.encoding} body is broken ({e})")
                return
            except InflatesPast:
                out = None
            data = b""
            if out is None or len(out) > room:
                self.refused = HTTPException(
                    413, f"the {self.encoding} body inflates past the limit of {_mb(self.limit)}"
                )
                return
            self._keep(out)
            if inflater.held:
                await anyio.sleep(0)

    def _keep(self, data: bytes) -> None:
        self.refused = self.held.charge(len(data))
        if self.refused is None:
            self.parts.append(data)
            self.size += len(data)
        else:
            self.parts.clear()
            self.held.release()

    async def end(self) -> None:
        """The body is over: what its inflater held until then (a snappy block) inflates."""
        if self.inflater is not None and self.refused is None:
            self.inflater.close()
            await self.feed(b"")

    def finish(self) -> bytes:
        if self.inflater is not None and not self.inflater.whole:
            raise HTTPException(400, f"the {self.encoding} body is truncated")
        body = b"".join(self.parts)
        self.parts.clear()
        return body


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"the body is larger than the limit of {_mb(limit)}")


def _mb(size: int) -> str:
    return f"{size / (1 << 20):g} MB" if size >= 1 << 20 else f"{size:,} bytes"


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
            "missing or wrong token: send Authorization: Bearer TOKEN (or Basic, password TOKEN)\n",
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await answer(scope, receive, send)

    def _allowed(self, header: bytes) -> bool:
        return token_allowed(header, self.tokens)


def token_allowed(header: bytes, tokens: Sequence[bytes]) -> bool:
    """Whether an Authorization header (Bearer T, or Basic with T as the password) names
    one of `tokens`. Every token is compared, so the time taken says nothing about which
    matched."""
    scheme, _, given = header.partition(b" ")
    if scheme.lower() == b"basic":
        given = _basic_password(given.strip())
    elif scheme.lower() == b"bearer":
        given = given.strip()
    else:
        return False
    matches = [hmac.compare_digest(given, token) for token in tokens]
    return bool(given) and any(matches)


def _basic_password(credentials: bytes) -> bytes:
    """The password of Basic credentials (base64 of `user:password`); b"" if malformed."""
    try:
        decoded = base64.b64decode(credentials, validate=True)
    except binascii.Error:
        return b""
    _, colon, password = decoded.partition(b":")
    return password if colon else b""


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
