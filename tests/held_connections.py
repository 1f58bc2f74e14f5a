"""Connections a test holds open to a server it started: which of them the server closed."""

from __future__ import annotations

import select
import socket
import time

# How long a test waits for the server to close connections: a bound for a loaded
# machine, not a measurement (the servers' own timeouts are 1 s and 10 s).
CLOSE_BOUND_S = 60


def closed_by_server(held: list[socket.socket], expected: int) -> int:
    """How many of `held` the server closed, waiting (boundedly) for `expected`."""
    closed: set[socket.socket] = set()
    deadline = time.monotonic() + CLOSE_BOUND_S
    while len(closed) < expected and time.monotonic() < deadline:
        ready, _, _ = select.select([c for c in held if c not in closed], [], [], 0.5)
        closed.update(c for c in ready if _eof(c))
    return len(closed)


def _eof(conn: socket.socket) -> bool:
    try:
        return conn.recv(65536) == b""
    except (ConnectionResetError, BlockingIOError):
        return True
