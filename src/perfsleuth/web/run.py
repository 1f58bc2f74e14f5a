"""Runs an app of web.app under uvicorn: bind checks, limits, quiet logs, clean shutdown.

uvicorn handles SIGTERM and SIGINT itself: it stops accepting, lets the requests in
flight finish (up to GRACE_S), runs `on_stop`, and ends the process by the signal it
caught (so what the caller holds is closed in `on_stop`, not after `serve`). A
`Companion` (another server on the same event loop: the collector's gRPC port) starts
once uvicorn listens and stops beside it, before `on_stop`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

import uvicorn
from starlette.types import ASGIApp

from perfsleuth.errors import UserError
from perfsleuth.web.app import Limits, is_loopback
from perfsleuth.web.guard import guarded_protocol

GRACE_S = 10


def parse_listen(listen: str, option: str = "--listen", example: str = "4040") -> tuple[str, int]:
    """HOST:PORT (IPv6 as [ADDR]:PORT) checked; a UserError names what is wrong."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"bad {option} {listen!r}: use HOST:PORT, e.g. 127.0.0.1:{example}")
    return host.strip("[]") or "127.0.0.1", int(port)


def check_tokens(host: str, tokens: Sequence[str], what: str) -> None:
    """Refuses to listen off the loopback address without a token, and empty tokens."""
    if any(not t.strip() for t in tokens):
        raise UserError("an empty --token protects nothing: give a secret")
    if not tokens and not is_loopback(host):
        raise UserError(
            f"{what} on {host} would accept anyone on the network: "
            "add --token SECRET (or listen on 127.0.0.1)"
        )


def bind(host: str, port: int, limits: Limits) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=limits.backlog)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} is in use: pick another") from e
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror}") from e


class Companion(Protocol):
    """A server run on uvicorn's event loop beside the app; the HTTP port splices the
    HTTP/2 connections it is sent to its `h2c_target` (web.h2c)."""

    h2c_target: str

    async def start(self) -> None: ...

    async def stop(self, grace_s: float) -> None: ...


class _Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        on_stop: Callable[[], None] | None,
        companion: Companion | None,
    ) -> None:
        super().__init__(config)
        self.on_stop = on_stop
        self.companion = companion

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.companion is not None and not self.should_exit:
            await self.companion.start()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        stopping = [super().shutdown(sockets)]
        if self.companion is not None:
            stopping.append(self.companion.stop(GRACE_S))
        await asyncio.gather(*stopping)
        if self.on_stop is not None:
            self.on_stop()


def serve(
    app: ASGIApp,
    sock: socket.socket,
    limits: Limits,
    *,
    verbose: bool = False,
    on_stop: Callable[[], None] | None = None,
    fast_loop: bool = False,
    companion: Companion | None = None,
) -> None:
    """Serves until SIGTERM or SIGINT; runs `on_stop` once the requests in flight are done
    (the companion's too). `fast_loop`: on uvloop's event loop (libuv, in C) rather than
    asyncio's."""
    config = uvicorn.Config(
        app,
        loop="uvloop" if fast_loop else "asyncio",
        # Not uvicorn's limit_concurrency: it counts every open connection, so idle ones
        # took the request slots. web.app's _Slots counts requests past the token check.
        limit_concurrency=None,
        timeout_keep_alive=int(limits.keep_alive_s),
        timeout_graceful_shutdown=GRACE_S,
        access_log=verbose,
        log_config=None,
        server_header=False,
        lifespan="off",
        http=guarded_protocol(limits, companion.h2c_target if companion else None),
    )
    _quiet_logs(verbose)
    _Server(config, on_stop, companion).run(sockets=[sock])


def _quiet_logs(verbose: bool) -> None:
    """Errors on stderr, one line each; uvicorn's per-connection warnings (a refused
    connection past the concurrency bound, a malformed request) only with --verbose,
    or a flood of bad clients floods the log too. The access log has a handler only
    with --verbose: uvicorn formats every answer's log line's parts (the client's
    address, the path) whenever it has one, whether the line is logged or not."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("perfsleuth: %(message)s"))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        log = logging.getLogger(name)
        log.handlers = [handler] if verbose or name != "uvicorn.access" else []
        log.propagate = False
        log.setLevel(logging.INFO if verbose else logging.ERROR)
