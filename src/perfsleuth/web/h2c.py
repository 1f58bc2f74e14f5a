"""HTTP/2 without TLS on an HTTP/1.1 port: a connection that opens with HTTP/2's
preface (what a gRPC client sends to an http:// address) is spliced, bytes both ways,
to a local server that speaks HTTP/2 (the collector's gRPC server, on an abstract Unix
socket), as Pyroscope serves gRPC, Connect and HTTP/1.1 on its one port.

web.guard calls `sniff` with a connection's first bytes: HTTP/1.1 requests never start
with the preface, so nothing else changes for them. The splice passes bytes through
with backpressure (a side that cannot keep up pauses the other's reading); either side
closing closes the other. At most MAX_SPLICED connections are spliced at once (past
it a new one is closed), each bounded further by the server it is spliced to.
"""

from __future__ import annotations

import asyncio
import socket
from enum import Enum
from typing import cast

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_SPLICED = 512


class Seen(Enum):
    HTTP2 = "http2"  # the whole preface: splice
    MORE = "more"  # a beginning of the preface: wait for more bytes
    OTHER = "other"  # anything else: HTTP/1.1


def sniff(first: bytes) -> Seen:
    """What a connection's first bytes are."""
    if first.startswith(PREFACE):
        return Seen.HTTP2
    return Seen.MORE if PREFACE.startswith(first) else Seen.OTHER


def splice(transport: asyncio.Transport, first: bytes, target: str) -> None:
    """Hands `transport` (its reader is set to the splice) to the server listening on
    the Unix socket `target` ("\\0name": abstract), `first` its bytes read so far."""
    if _Down.open >= MAX_SPLICED:
        transport.close()
        return
    down = _Down(transport, first)
    transport.set_protocol(down)
    transport.pause_reading()  # until the other side is connected
    asyncio.get_running_loop().create_task(down.connect(target))


class _Side(asyncio.Protocol):
    """One side of a splice: what it reads is written to `other`'s transport."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.other: _Side | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not asyncio's class

    def data_received(self, data: bytes) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.close()  # what it still buffers is sent first

    def pause_writing(self) -> None:  # its transport is full: stop reading the other
        if self.other is not None and self.other.transport is not None:
            self.other.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.resume_reading()


class _Down(_Side):
    """The client's side (the connection accepted on the HTTP port), handed over
    connected: `first` its bytes read so far."""

    open = 0  # spliced connections open

    def __init__(self, transport: asyncio.Transport, first: bytes) -> None:
        super().__init__()
        self.transport = transport
        self.first = first
        _Down.open += 1

    async def connect(self, target: str) -> None:
        loop = asyncio.get_running_loop()
        up = _Side()
        up.other = self
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:  # connected first: uvloop's create_unix_connection refuses abstract names
            await loop.sock_connect(sock, target)
            await loop.create_unix_connection(lambda: up, sock=sock)
        except OSError:
            sock.close()
            assert self.transport is not None
            self.transport.close()
            return
        self.other = up
        assert self.transport is not None and up.transport is not None
        if self.transport.is_closing():
            up.transport.close()
            return
        up.transport.write(self.first)
        self.first = b""
        self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        _Down.open -= 1
        super().connection_lost(exc)
