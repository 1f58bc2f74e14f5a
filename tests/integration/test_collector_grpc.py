"""The collector's gRPC server, called by grpcio's own client on 127.0.0.1 through its
one port (HTTP/2 spliced to it beside HTTP/1.1) and its `--grpc` port: OTLP profiles'
ProfilesService/Export and Pyroscope's push.v1.PusherService/Push stored as over HTTP (a
retry over the other transport stored once), and every refusal a gRPC status with one
line. The OpenTelemetry Collector's real `otlp` exporter pushes to both ports in
test_otel_collector.py; the Connect client's gRPC protocol in test_pyroscope_clients.py.
"""

from __future__ import annotations

import gzip
import itertools
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceResponse,
)
from test_collector import (
    PERFSLEUTH,
    TOKEN,
    Collector,
    captured_pprof,
    free_port,
    request,
    start,
    stop,
)
from test_otel_collector import RESOURCE, listening, otlp_request, pushed_self

from perfsleuth.formats.wire import push_pb2

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
PUSH = "/push.v1.PusherService/Push"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pyroscope"
AUTH = [("authorization", f"Bearer {TOKEN}")]
MAX_BODY_MB = 1
PROTOBUF = {"Content-Type": "application/x-protobuf"}
EXPORTS = itertools.count()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Collector, int]]:
    """A collector with --grpc (and --max-body 1 MB): it and its gRPC port."""
    port = free_port()
    running = start(
        tmp_path_factory.mktemp("fleet-grpc"),
        *("--token", TOKEN, "--grpc", f"127.0.0.1:{port}", "--max-body", str(MAX_BODY_MB)),
    )
    assert listening(port, running.proc), "the gRPC port did not open"
    yield running, port
    assert "Traceback" not in stop(running)


@pytest.fixture(scope="module", params=["one-port", "grpc-port"])
def channel(
    served: tuple[Collector, int], request: pytest.FixtureRequest
) -> Iterator[grpc.Channel]:
    """A channel to the collector's one port (HTTP/1.1 and HTTP/2) or its --grpc port."""
    collector, grpc_port = served
    port = collector.port if request.param == "one-port" else grpc_port
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield channel


def call(channel: grpc.Channel, method: str, body: bytes, **kwargs: object) -> bytes:
    return channel.unary_unary(method)(body, timeout=30, **kwargs)  # type: ignore[no-any-return]


def refusal(channel: grpc.Channel, method: str, body: bytes, **kwargs: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call(channel, method, body, **kwargs)
    return refused.value


def test_an_otlp_export_over_grpc_is_stored_and_its_retry_over_http_is_not(
    served: tuple[Collector, int], channel: grpc.Channel
) -> None:
    collector, _ = served
    key = RESOURCE["service.name"], RESOURCE["host.name"]
    before = collector.totals().get(key, 0)
    pprof = captured_pprof("cpu")
    ended = int(time.time()) - 20 * next(EXPORTS)  # each export its own window
    body = otlp_request(pprof, ended).SerializeToString()
    answer = call(channel, EXPORT, body, metadata=AUTH, compression=grpc.Compression.Gzip)
    assert ExportProfilesServiceResponse.FromString(answer).partial_success.rejected_profiles == 0
    stored = collector.totals()[key]
    assert stored - before == sum(pushed_self(pprof).values()) // 10_000_000  # its 10 ms period

    status, _ = collector.post("/v1development/profiles", body, headers=PROTOBUF)
    assert status == 200
    assert collector.totals()[key] == stored
    metrics = request(collector.url("/metrics"), None, dict([AUTH[0]]))[1].decode()
    assert 'endpoint="otlp",result="duplicate"' in metrics


def test_http_1_1_beginning_like_http_2_is_still_http_1_1(served: tuple[Collector, int]) -> None:
    """A request whose first byte comes alone (`P`, as a POST and HTTP/2's preface
    begin), then the rest a byte at a time: held until it is not the preface, then read
    as HTTP/1.1."""
    collector, _ = served
    sent = b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", collector.port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(sent[:1])
        time.sleep(0.5)  # read alone, most likely: the test holds either way
        for byte in sent[1:]:
            sock.sendall(bytes([byte]))
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 405"), answer  # /healthz is GET only: HTTP/1.1's answer


def test_a_pyroscope_push_over_grpc_is_stored(
    served: tuple[Collector, int], channel: grpc.Channel
) -> None:
    """pyroscope-io 1.4.0's captured Connect push (service pyprog), as a gRPC message."""
    collector, _ = served
    body = gzip.decompress((FIXTURES / "push-python-1.4.0.bin.gz").read_bytes())
    assert call(channel, PUSH, body, metadata=AUTH) == b""  # an empty PushResponse
    pushed = push_pb2.PushRequest.FromString(body)
    assert {label.value for label in pushed.series[0].labels if label.name == "service_name"} == {
        "pyprog"
    }
    assert sum(n for (service, _), n in collector.totals().items() if service == "pyprog") > 0


@pytest.mark.parametrize(
    ("method", "body", "metadata", "code", "message"),
    [
        (EXPORT, b"", [], grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token"),
        (EXPORT, b"", [("authorization", "Bearer nope")], grpc.StatusCode.UNAUTHENTICATED, ""),
        (EXPORT, b"\xff\xff", AUTH, grpc.StatusCode.INVALID_ARGUMENT, "not a valid OTLP"),
        (PUSH, b"\xff\xff", AUTH, grpc.StatusCode.INVALID_ARGUMENT, "not a valid push.v1"),
        (PUSH, b"", AUTH, grpc.StatusCode.INVALID_ARGUMENT, "holds no profile"),
        (
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            b"",
            AUTH,
            grpc.StatusCode.UNIMPLEMENTED,
            "does not serve /opentelemetry.proto.collector.trace.v1.TraceService/Export over "
            "gRPC; it serves opentelemetry.proto.collector.profiles.v1development."
            "ProfilesService/Export and push.v1.PusherService/Push",
        ),
        (EXPORT, bytes(2 << 20), AUTH, grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
    ],
    ids=["no-token", "wrong-token", "bad-otlp", "bad-push", "empty-push", "traces", "too-large"],
)
def test_refusals_are_a_status_and_one_line(
    channel: grpc.Channel,
    method: str,
    body: bytes,
    metadata: list,
    code: grpc.StatusCode,
    message: str,
) -> None:
    refused = refusal(channel, method, body, metadata=metadata)
    assert refused.code() == code, refused
    assert message in refused.details() and "\n" not in refused.details()
    assert "Traceback" not in refused.details()


def test_a_gzip_bomb_stops_at_the_limit(channel: grpc.Channel) -> None:
    """64 MB of zeros, 64 KB gzipped: refused once inflated past --max-body."""
    refused = refusal(
        channel, EXPORT, bytes(64 << 20), metadata=AUTH, compression=grpc.Compression.Gzip
    )
    assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grpc", "4317"], "bad --grpc '4317': use HOST:PORT, e.g. 127.0.0.1:4317"),
        (["--grpc", "0.0.0.0:4317"], "gRPC port on 0.0.0.0 would accept anyone"),
        (["--grpc", "127.0.0.1:4040"], "--grpc names the --listen port 4040: gRPC is served"),
    ],
)
def test_bad_grpc_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = subprocess.run(
        [str(PERFSLEUTH), "collector", "--listen", "127.0.0.1:4040", "--store", str(tmp_path)]
        + args,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_grpc_port_in_use_is_said(served: tuple[Collector, int], tmp_path: Path) -> None:
    out = subprocess.run(
        [str(PERFSLEUTH), "collector", "--listen", "127.0.0.1:0", "--store", str(tmp_path)]
        + ["--grpc", f"127.0.0.1:{served[1]}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert f"port {served[1]} is in use" in out.stderr, out.stderr
