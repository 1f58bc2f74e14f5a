"""uvicorn's HTTP/1.1 protocol with bounds on connections that send no request.

uvicorn keeps a connection that has not finished its request headers for as long as
the client likes (slowloris). Here a connection waiting for a request is closed after
Limits.header_timeout_s, at most Limits.max_idle of them that have waited past
Limits.idle_grace_s are kept, and at most Limits.max_waiting in all: past either, the
longest-waiting one is closed. The grace keeps a burst of new connections, whose
requests are already on their way, from closing one another; max_waiting bounds the
descriptors a flood of new connections can hold within its grace. None of them takes a
request slot (web.app counts requests, not connections).

The protocol is uvicorn's httptools one (the HTTP parser in C): h11's parser in pure
Python cost a collector about a quarter of a small push's CPU. An answer's head goes out
with its body, in one write (_HeadWithBody). With an `h2c_target`, a connection that
opens with HTTP/2's preface (gRPC to an http:// address) is spliced to it (web.h2c).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from perfsleuth.web import h2c
from perfsleuth.web.app import Limits


def guarded_protocol(limits: Limits, h2c_target: str | None = None) -> type[HttpToolsProtocol]:
    """The protocol class for uvicorn.Config(http=...), bounded by `limits`; HTTP/2
    connections spliced to the Unix socket `h2c_target` (None: answered as HTTP/1.1)."""
    attributes = {"limits": limits, "h2c_target": h2c_target}
    return type("GuardedHttpToolsProtocol", (_Guarded,), attributes)


class _Guarded(HttpToolsProtocol):
    limits: Limits
    h2c_target: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since = time.monotonic()
        self._check: asyncio.TimerHandle | None = None
        # the connection's first bytes while they may be HTTP/2's preface
        self._first: bytes | None = b"" if self.h2c_target else None

    def data_received(self, data: bytes) -> None:
        if self._first is not None:
            data = self._first + data
            seen = h2c.sniff(data)
            if seen is h2c.Seen.MORE:
                self._first = data
                return
            self._first = None
            if seen is h2c.Seen.HTTP2 and self.h2c_target is not None:
                self._hand_over(data, self.h2c_target)
                return
        super().data_received(data)

    def _hand_over(self, first: bytes, target: str) -> None:
        """The connection spliced to `target`: no longer one of uvicorn's nor bounded here."""
        if self._check is not None:
            self._check.cancel()
            self._check = None
        self.connections.discard(self)
        h2c.splice(self.transport, first, target)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._schedule_check()
        self._close_longest_waiting()
        # once this one's grace is over it may be idle too: count again then
        self.loop.call_later(self.limits.idle_grace_s, self._close_longest_waiting)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._check is not None:
            self._check.cancel()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and not isinstance(cycle.transport, _HeadWithBody):
            cycle.transport = cast(asyncio.Transport, _HeadWithBody(cycle))

    def on_response_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and isinstance(cycle.transport, _HeadWithBody):
            cycle.transport.flush()  # a head without a body (HEAD): sent now
        self._waiting_since = time.monotonic()
        super().on_response_complete()

    def waiting(self) -> bool:
        """No request in progress: before the first one, or between two."""
        return self.cycle is None or self.cycle.response_complete

    def open_and_waiting(self) -> bool:
        return self.waiting() and not self.transport.is_closing()

    def _schedule_check(self) -> None:
        self._check = self.loop.call_later(self.limits.header_timeout_s, self._drop_if_stalled)

    def _drop_if_stalled(self) -> None:
        stalled = time.monotonic() - self._waiting_since >= self.limits.header_timeout_s
        if self.waiting() and stalled:
            self.transport.close()
        elif not self.transport.is_closing():
            self._schedule_check()

    def _close_longest_waiting(self) -> None:
        if len(self.connections) <= min(self.limits.max_idle, self.limits.max_waiting):
            return  # neither bound can be passed: nothing to sort
        idle_since = time.monotonic() - self.limits.idle_grace_s
        waiting = sorted(
            (c for c in self.connections if isinstance(c, _Guarded) and c.open_and_waiting()),
            key=lambda c: c._waiting_since,
        )
        idle = sum(c._waiting_since <= idle_since for c in waiting)
        excess = max(idle - self.limits.max_idle, len(waiting) - self.limits.max_waiting, 0)
        for conn in waiting[:excess]:
            conn.transport.close()


class _HeadWithBody:
    """A request cycle's transport that holds its answer's head until the body's first
    bytes and sends both in one write. uvicorn writes them apart: two sends, each waking
    the client (on loopback each send runs the client's TCP receive too), ~a tenth of a
    small push's event-loop time (py-spy). Whatever else the cycle asks goes to the
    connection's transport; closing it sends a head still held first."""

    def __init__(self, cycle: Any) -> None:
        self.transport: asyncio.Transport = cycle.transport
        self.cycle = cycle
        self.head: bytes | None = None
        self.started = False

    def write(self, data: bytes) -> None:
        if self.cycle.response_started and not self.started:  # the head: uvicorn's first
            self.started = True  # write once the answer has started
            self.head = data
            return
        if self.head is None:
            self.transport.write(data)
            return
        head, self.head = self.head, None
        self.transport.writelines((head, data))

    def flush(self) -> None:
        if self.head is not None:
            head, self.head = self.head, None
            self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)
