"""web/h2c.py's look at a connection's first bytes: HTTP/2's preface (a gRPC client's
`PRI * HTTP/2.0`), a beginning of it, or HTTP/1.1."""

from __future__ import annotations

import pytest

from perfsleuth.web.h2c import PREFACE, Seen, sniff


@pytest.mark.parametrize(
    ("first", "seen"),
    [
        (PREFACE, Seen.HTTP2),
        (PREFACE + b"\x00\x00\x12\x04\x00", Seen.HTTP2),  # its SETTINGS frame in the same read
        (b"", Seen.MORE),
        (b"P", Seen.MORE),  # a POST begins so too
        (PREFACE[:-1], Seen.MORE),
        (b"PO", Seen.OTHER),
        (b"POST /ingest HTTP/1.1\r\n", Seen.OTHER),
        (b"GET / HTTP/1.1\r\n", Seen.OTHER),
        (b"PRI * HTTP/2.1\r\n", Seen.OTHER),
    ],
)
def test_the_first_bytes_say_what_the_connection_speaks(first: bytes, seen: Seen) -> None:
    assert sniff(first) is seen
