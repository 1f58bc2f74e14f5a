"""gRPC-Web's framing (formats/wire/grpc_web.py) on a captured push: what the Connect
client connectrpc.com/connect v1.20.0 made with connect.WithGRPCWeb() sent (the
Alloy-style pusher of tests/clients/go/alloy/ with CONNECT_PROTOCOL=grpcweb, one
process_cpu push; its path and headers in the .json beside it)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from perfsleuth.formats.wire import grpc_web, push_pb2, pyroscope_push
from perfsleuth.formats.wire.ingest import PayloadError, TooLarge

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pyroscope"
NAME = "push-connect-1.20.0-grpcweb"
LIMIT = 1 << 20


def captured() -> tuple[bytes, dict]:
    body = (FIXTURES / f"{NAME}.bin").read_bytes()
    return body, json.loads((FIXTURES / f"{NAME}.json").read_text())


def test_the_captured_push_is_one_push_request() -> None:
    body, request = captured()
    assert grpc_web.is_grpc_web(request["headers"]["Content-Type"])
    message = grpc_web.message(body, "identity", LIMIT)
    assert len(message) == len(body) - 5
    series = push_pb2.PushRequest.FromString(message).series
    assert {p.name: p.value for p in series[0].labels}["__name__"] == "process_cpu"
    windows = pyroscope_push.decode(message, pyroscope_push.PROTO, "c-1", LIMIT)
    assert windows and windows[0].labels["service"] == "alloy-grpcweb"


def test_a_gzipped_message_is_inflated_within_the_limit() -> None:
    message = grpc_web.message(captured()[0], "identity", LIMIT)
    packed = gzip.compress(message)
    frame = bytes([1]) + len(packed).to_bytes(4, "big") + packed
    assert grpc_web.message(frame, "gzip", LIMIT) == message
    bomb = gzip.compress(bytes(LIMIT + 1))
    with pytest.raises(TooLarge):
        grpc_web.message(bytes([1]) + len(bomb).to_bytes(4, "big") + bomb, "gzip", LIMIT)


@pytest.mark.parametrize(
    ("body", "encoding", "error"),
    [
        (b"\x00\x00", "identity", "holds no message frame"),
        (b"\x80\x00\x00\x00\x00", "identity", "flags are 0x80"),
        (b"\x00\x00\x00\x00\x09abc", "identity", "says 9 bytes and the body holds 3"),
        (b"\x00\x00\x00\x00\x01ab", "identity", "says 1 bytes and the body holds 2"),
        (b"\x01\x00\x00\x00\x02ab", "zstd", "compressed by 'zstd': send gzip or identity"),
    ],
)
def test_bad_frames_are_refused_with_the_reason(body: bytes, encoding: str, error: str) -> None:
    with pytest.raises(PayloadError, match=error):
        grpc_web.message(body, encoding, LIMIT)


def test_the_answer_is_its_message_then_status_ok() -> None:
    assert grpc_web.answer(b"") == b"\x00\x00\x00\x00\x00\x80\x00\x00\x00\x10grpc-status: 0\r\n"


def test_a_refusal_is_one_percent_encoded_line() -> None:
    headers = grpc_web.refusal(grpc_web.INVALID_ARGUMENT, "not a valid\npush: 100% «bad»\n")
    assert headers["grpc-status"] == "3"
    assert "\n" not in headers["grpc-message"] and "%25" in headers["grpc-message"]
    assert unquote(headers["grpc-message"]) == "not a valid push: 100% «bad»"
