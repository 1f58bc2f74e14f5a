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
Python cost a collector about a quarter of a small push's CPU.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from perfsleuth.web.app import Limits


def guarded_protocol(limits: Limits) -> type[HttpToolsProtocol]:
    """The protocol class for uvicorn.Config(http=...), bounded by `limits`."""
    return type("GuardedHttpToolsProtocol", (_Guarded,), {"limits": limits})


class _Guarded(HttpToolsProtocol):
    limits: Limits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since = time.monotonic()
        self._check: asyncio.TimerHandle | None = None

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

    def on_response_complete(self) -> None:
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
        idle_since = time.monotonic() - self.limits.idle_grace_s
        waiting = sorted(
            (c for c in self.connections if isinstance(c, _Guarded) and c.open_and_waiting()),
            key=lambda c: c._waiting_since,
        )
        idle = sum(c._waiting_since <= idle_since for c in waiting)
        excess = max(idle - self.limits.max_idle, len(waiting) - self.limits.max_waiting, 0)
        for conn in waiting[:excess]:
            conn.transport.close()
