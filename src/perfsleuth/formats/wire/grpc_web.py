"""gRPC-Web's framing, as a Connect client made with connect.WithGRPCWeb() sends a unary
call over HTTP/1.1: the request's one message out of its frame, the answer's frames.

A frame is a flags byte (0x01: the message is compressed by the request's
`grpc-encoding`; 0x80: a trailer frame), the message's length (4 bytes, big-endian) and
the message. An answer is the response message's frame, then a trailer frame holding
`grpc-status: 0`; a refusal is "trailers-only": no frame, its `grpc-status` and
`grpc-message` in the HTTP headers.
"""

from __future__ import annotations

from urllib.parse import quote

from perfsleuth.formats.wire import ingest
from perfsleuth.formats.wire.ingest import PayloadError

CONTENT_TYPES = ("application/grpc-web", "application/grpc-web+proto")
COMPRESSED = 0x01
TRAILER = 0x80
HEADER = 5
# gRPC status codes a refusal gives
INVALID_ARGUMENT = 3
UNIMPLEMENTED = 12


def is_grpc_web(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() in CONTENT_TYPES


def message(body: bytes, encoding: str, limit: int) -> bytes:
    """The one message of a unary request's body, inflated when its frame says it is
    compressed (gzip only) up to `limit` bytes; PayloadError for anything else."""
    if len(body) < HEADER:
        raise PayloadError("the gRPC-Web body holds no message frame: send one message")
    flags, size = body[0], int.from_bytes(body[1:HEADER], "big")
    if flags & ~COMPRESSED:
        raise PayloadError(f"the gRPC-Web frame's flags are {flags:#04x}: send one message frame")
    if len(body) != HEADER + size:
        raise PayloadError(
            f"the gRPC-Web frame says {size:,} bytes and the body holds {len(body) - HEADER:,} "
            "after it: send one whole message"
        )
    data = body[HEADER:]
    if not flags & COMPRESSED:
        return data
    if encoding.strip().lower() != "gzip" or data[:2] != ingest.GZIP_MAGIC:
        raise PayloadError(
            f"the gRPC-Web message is compressed by {encoding[:40]!r}: send gzip or identity"
        )
    return ingest.gunzip(data, limit)


def answer(response: bytes) -> bytes:
    """The body of an answer: `response`'s frame, then the trailer frame of status OK."""
    trailer = b"grpc-status: 0\r\n"
    return (
        bytes([0])
        + len(response).to_bytes(4, "big")
        + response
        + bytes([TRAILER])
        + len(trailer).to_bytes(4, "big")
        + trailer
    )


def refusal(status: int, text: str) -> dict[str, str]:
    """The headers of a trailers-only refusal: `status` and `text` (one line,
    percent-encoded as gRPC's grpc-message is)."""
    line = " ".join(text.split())
    return {"grpc-status": str(status), "grpc-message": quote(line, safe=" !#$&'()*+,/:;=?@[]~")}
