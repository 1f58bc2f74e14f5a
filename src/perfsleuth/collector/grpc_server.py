"""The collector's gRPC port (`perfsleuth collector --grpc HOST:PORT`), on uvicorn's
event loop beside the HTTP app (web.run's Companion), by grpcio's asyncio server:

- OTLP_EXPORT, OTLP profiles' ProfilesService/Export: what the OpenTelemetry
  Collector's `otlp` exporter, the OTel SDKs and the OTel eBPF profiler send to port
  4317 by default;
- PUSH, Pyroscope's push.v1.PusherService/Push as plain gRPC (a Connect client made
  with connect.WithGRPC() over HTTP/2 without TLS).

Each message is stored as the HTTP routes store it (collector.app: the same decoding,
limits and push names, so a retry sent over either transport is stored once) and
answered with the method's response message, or a gRPC status with one line: the
token (`authorization` metadata, Bearer or Basic as over HTTP) is checked when the call
starts, before its message is read (UNAUTHENTICATED); a bad message is
INVALID_ARGUMENT (not retried); a store that cannot be written and a server holding too
many messages UNAVAILABLE (retried); an unknown method UNIMPLEMENTED naming the two it
serves. A message may be at most --max-body as it arrives and once its grpc-encoding
(gzip or deflate: what grpcio reads) is inflated (RESOURCE_EXHAUSTED past it, from
grpcio); at most Limits.concurrency calls run at once (RESOURCE_EXHAUSTED past it).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from typing import Any

import grpc
from starlette.exceptions import HTTPException

from ..errors import UserError
from ..formats.wire import otlp_profiles, pyroscope_push
from ..formats.wire.ingest import PayloadError
from ..web.app import SMALL_BODY, Limits, token_allowed
from .app import CONNECT_PUSH, Collector, digest

OTLP_EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
PUSH = CONNECT_PUSH
# The HTTP routes whose push names a gRPC message shares (collector.app.digest).
HTTP_PATHS = {OTLP_EXPORT: "/v1development/profiles", PUSH: CONNECT_PUSH}
# /metrics' endpoint names of the gRPC methods.
ENDPOINTS = {OTLP_EXPORT: "otlp_grpc", PUSH: "connect_grpc"}
IDLE_MS = 300_000
PING_MS = 10_000
TOKEN_ERROR = "missing or wrong token: send the metadata authorization: Bearer TOKEN"


class GrpcServer:
    """OTLP_EXPORT and PUSH served into `collector` (a web.run Companion): on an
    abstract Unix socket of its own, which the HTTP port splices its HTTP/2 connections
    to (`h2c_target`), and on `listen` (HOST, PORT) when given."""

    def __init__(
        self,
        collector: Collector,
        tokens: Sequence[str],
        limits: Limits,
        listen: tuple[str, int] | None = None,
    ) -> None:
        self.collector = collector
        self.tokens = tuple(t.encode() for t in tokens)
        self.limits = limits
        self.listen = listen
        name = f"perfsleuth-grpc-{os.getpid()}-{secrets.token_hex(8)}"
        self.socket = f"unix-abstract:{name}"
        self.h2c_target = f"\0{name}"  # the same socket, as asyncio names it
        self.held = 0  # message bytes held by the calls in progress
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        server = grpc.aio.server(
            handlers=[_Methods(self)],
            maximum_concurrent_rpcs=self.limits.concurrency,
            options=[
                ("grpc.max_receive_message_length", self.limits.max_body),
                ("grpc.so_reuseport", 0),  # a second collector on the port is an error
                # a connection that sends no HTTP/2 settings in time is closed, as the
                # HTTP port closes one without a request head; an idle one after 5 min
                ("grpc.server_handshake_timeout_ms", int(self.limits.header_timeout_s * 1000)),
                ("grpc.max_connection_idle_ms", IDLE_MS),
                # clients' keepalive pings as Pyroscope's server takes them: every 10 s at
                # most, also between calls (grpcio's default would answer a client pinging
                # more often than every 5 min without a call with GOAWAY too_many_pings)
                ("grpc.http2.min_ping_interval_without_data_ms", PING_MS),
                ("grpc.keepalive_permit_without_calls", 1),
            ],
        )
        server.add_insecure_port(self.socket)
        where = "on the HTTP port"
        if self.listen is not None:
            host, port = self.listen
            address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            try:
                port = server.add_insecure_port(address)
            except RuntimeError as e:
                raise UserError(f"cannot serve gRPC on {address} ({e}): pick another") from e
            where += f" and on {address.rsplit(':', 1)[0]}:{port}"
        await server.start()
        self.server = server
        print(f"perfsleuth: gRPC (OTLP profiles, Pyroscope push) {where}", file=sys.stderr)

    async def stop(self, grace_s: float) -> None:
        if self.server is not None:
            await self.server.stop(grace_s)

    def allowed(self, metadata: Sequence[tuple[str, Any]] | None) -> bool:
        if not self.tokens:
            return True
        header = dict(metadata or ()).get("authorization", "")
        given = header.encode() if isinstance(header, str) else bytes(header)
        return token_allowed(given, self.tokens)

    async def call(self, method: str, body: bytes, context: grpc.aio.ServicerContext) -> bytes:
        """The method's response message for `body`, or an abort with its status."""
        size = len(body)
        limits = self.limits
        if size > SMALL_BODY and self.held + size > limits.max_buffered:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"busy: the calls in progress hold {self.held:,} bytes of messages, the "
                f"limit of {limits.max_buffered:,}; retry shortly",
            )
        self.held += size
        try:
            return await self._store(method, body)
        except PayloadError as e:  # counted in /metrics where it was refused
            code, message = grpc.StatusCode.INVALID_ARGUMENT, str(e)
        except HTTPException as e:  # 503: the store cannot be written, retry later
            unavailable = e.status_code == 503
            code = grpc.StatusCode.UNAVAILABLE if unavailable else grpc.StatusCode.INVALID_ARGUMENT
            message = e.detail.strip()
        finally:
            self.held -= size
        await context.abort(code, message)
        return b""  # not reached: abort raises

    async def _store(self, method: str, body: bytes) -> bytes:
        name, endpoint = digest(HTTP_PATHS[method], [], body), ENDPOINTS[method]
        if method == OTLP_EXPORT:
            media = otlp_profiles.PROTOBUF
            answer = await self.collector.otlp_export(body, media, name, endpoint)
            return answer.SerializeToString()
        pushed = await self.collector.pyroscope_push(body, pyroscope_push.PROTO, name, endpoint)
        if pushed.status_code != 200:
            raise PayloadError(bytes(pushed.body).decode(errors="replace").strip())
        return b""  # an empty push.v1.PushResponse


class _Methods(grpc.GenericRpcHandler):
    """Every method the port is asked for: the two served, behind the token check made
    when the call starts; any other refused by name."""

    def __init__(self, server: GrpcServer) -> None:
        self.server = server

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = details.method
        if method not in ENDPOINTS:
            served = " and ".join(m.lstrip("/") for m in ENDPOINTS)
            return _refusal(
                grpc.StatusCode.UNIMPLEMENTED,
                f"perfsleuth's collector does not serve {method[:120]} over gRPC; "
                f"it serves {served}",
            )
        if not self.server.allowed(details.invocation_metadata):
            return _refusal(grpc.StatusCode.UNAUTHENTICATED, TOKEN_ERROR)

        async def call(body: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return await self.server.call(method, body, context)

        return grpc.unary_unary_rpc_method_handler(call)


def _refusal(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A call ended with `code` at once, its message left unread (a streaming handler
    never asks for it)."""

    async def refuse(messages: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, message)

    return grpc.stream_unary_rpc_method_handler(refuse)
