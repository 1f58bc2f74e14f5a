"""A real `perfsleuth collector` on 127.0.0.1 attacked as a hostile or broken client would.

Every attack gets a one-line 4xx naming the reason and the limit (or the connection is
closed, for those that never send a request), stores nothing, keeps the collector's
peak resident memory (VmHWM) under MEMORY_BOUND_MB, and a legitimate client pushing
meanwhile has every push stored.
"""

from __future__ import annotations

import gzip
import itertools
import json
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from held_connections import CLOSE_BOUND_S, closed_by_server
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
)
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
from test_collector import NOW, TOKEN, Collector, folded_query, otlp_request, start, stop

from perfsleuth.collector.app import CONNECT_PUSH
from perfsleuth.formats import profile_pb2
from perfsleuth.formats.wire import push_pb2

pytestmark = pytest.mark.timeout(300)

# The collector at its defaults (--max-body 32): 2 decoding threads, 4 bodies of 32 MB
# held at most, each decode a few times its body. Measured peak: see docs/fleet.md.
MEMORY_BOUND_MB = 1200
PROTOBUF = {"Content-Type": "application/x-protobuf"}
CONNECT_PROTO = {"Content-Type": "application/proto"}
CONNECT_JSON = {"Content-Type": "application/json"}
LEGIT = itertools.count()
T = TypeVar("T")


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start(tmp_path_factory.mktemp("fleet"), "--token", TOKEN)
    yield running
    assert peak_rss_mb(running) < MEMORY_BOUND_MB
    assert "Traceback" not in stop(running)


def peak_rss_mb(collector: Collector) -> float:
    status = Path(f"/proc/{collector.proc.pid}/status").read_text()
    line = next(ln for ln in status.splitlines() if ln.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def legit_push(collector: Collector) -> bool:
    """One small folded push of a well-behaved client; True when it was stored."""
    n = next(LEGIT)
    body = f"main;serve;handle_{n} {n + 1}\n".encode()
    status, answer = collector.post("/ingest", body, folded_query("legit", "good-1"))
    return status == 200 and json.loads(answer)["stored"] is True


def under_attack(collector: Collector, attack: Callable[[], T]) -> T:
    """attack() on a thread while a legitimate client pushes; its result, once every
    legitimate push (at least two) was checked stored, and memory checked bounded."""
    stored: list[bool] = []
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(attack)
        while not future.done() or len(stored) < 2:
            stored.append(legit_push(collector))
        result = future.result()
    assert all(stored), stored
    assert peak_rss_mb(collector) < MEMORY_BOUND_MB
    return result


def otlp_export(**changes: object) -> bytes:
    """The valid OTLP request of test_collector with its profile's fields changed."""
    request = otlp_request()
    profile = request.resource_profiles[0].scope_profiles[0].profiles[0]
    for name, value in changes.items():
        setattr(profile, name, value)
    return request.SerializeToString()


def otlp_period(period: int, value: int) -> bytes:
    request = ExportProfilesServiceRequest.FromString(otlp_export(period=period))
    profile = request.resource_profiles[0].scope_profiles[0].profiles[0]
    profile.samples[0].values[:] = [value]
    return request.SerializeToString()


def otlp_many_lines(lines: int, references: int) -> bytes:
    """One Location of `lines` inlined lines, a stack referencing it `references` times."""
    request = otlp_request()
    d = request.dictionary
    d.location_table.append(
        otlp.Location(mapping_index=1, lines=[otlp.Line(function_index=1)] * lines)
    )
    d.stack_table.append(otlp.Stack(location_indices=[len(d.location_table) - 1] * references))
    profile = request.resource_profiles[0].scope_profiles[0].profiles[0]
    profile.samples[0].stack_index = len(d.stack_table) - 1
    return request.SerializeToString()


def folded(**query: str) -> dict:
    return {**folded_query("hostile", "bad-1"), **query}


def gzip_bomb(inflated: int) -> bytes:
    """Valid folded stacks, `inflated` bytes of them, gzipped (about 1,000 to 1)."""
    line = b"main;work 1\n"
    return gzip.compress(line * (inflated // len(line)), compresslevel=9)


BOMB = gzip_bomb(128 << 20)

PAYLOADS = {
    "count past int64 as CPU ns": (
        "/ingest",
        b"a;b 9007199254740991\n",
        folded(),
        "at most 2**53 ns",
    ),
    "sampleRate=1e-300": ("/ingest", b"a;b 1\n", folded(sampleRate="1e-300"), "at most 2**53"),
    "OTLP period 2^53 ns x 2^40": (
        "/v1development/profiles",
        otlp_period(1 << 53, 1 << 40),
        None,
        "at most 2**53",
    ),
    "20-digit pid": (
        "/ingest",
        b"a;b 1\n",
        folded(name="x.cpu{pid=12345678901234567890}"),
        "process id",
    ),
    "pid=abc": ("/ingest", b"a;b 1\n", folded(name="x.cpu{pid=abc}"), "process id"),
    "pid=-1": ("/ingest", b"a;b 1\n", folded(name="x.cpu{pid=-1}"), "0 to 4294967295"),
    "count of superscript two": ("/ingest", "a;b ²\n".encode(), folded(), "folded line 1"),
    "JSON nested 100,000 deep": ("/agent/status", b"[" * 100_000, None, "nested too deeply"),
    "a Location of 200,000 lines referenced 300 times": (
        "/v1development/profiles",
        otlp_many_lines(200_000, 300),
        None,
        "at most 4096",
    ),
    "OTLP duration_nano 2^64-1": (
        "/v1development/profiles",
        otlp_export(duration_nano=(1 << 64) - 1),
        None,
        "outside 2001-2100",
    ),
    "190 KiB gzip inflating to 128 MB": ("/ingest", BOMB, folded(), "limit of 32 MB"),
}


@pytest.mark.parametrize("attack", PAYLOADS)
def test_a_hostile_payload_gets_400_with_the_limit_and_stores_nothing(
    collector: Collector, attack: str
) -> None:
    path, body, query, message = PAYLOADS[attack]
    before = collector.totals()
    status, answer = under_attack(collector, lambda: collector.post(path, body, query, PROTOBUF))
    text = answer.decode()
    assert (status, text.count("\n")) == (400, 1), text
    assert message in text
    assert {k: v for k, v in collector.totals().items() if k[0] != "legit"} == {
        k: v for k, v in before.items() if k[0] != "legit"
    }


def test_a_gzip_bomb_as_content_encoding_stops_at_the_limit(collector: Collector) -> None:
    headers = {"Content-Encoding": "gzip"}
    status, answer = under_attack(
        collector, lambda: collector.post("/ingest", BOMB, folded(), headers)
    )
    assert status == 413 and "inflates past the limit of 32 MB" in answer.decode()


def test_a_connect_push_of_many_small_bombs_shares_one_limit(collector: Collector) -> None:
    """200 valid profiles of 1 KB each inflating to 1 MB: 200 MB in all, refused at 32 MB."""
    profile = profile_pb2.Profile(
        string_table=["", "samples", "count", "x" * (1 << 20)],
        sample_type=[profile_pb2.ValueType(type=1, unit=2)],
        sample=[profile_pb2.Sample(value=[1])],
        time_nanos=(NOW - 10) * 10**9,
        duration_nanos=10**10,
    )
    bomb = gzip.compress(profile.SerializeToString())
    series = push_pb2.RawProfileSeries(
        labels=[push_pb2.LabelPair(name="service_name", value="hostile")],
        samples=[push_pb2.RawSample(raw_profile=bomb)] * 200,
    )
    body = push_pb2.PushRequest(series=[series]).SerializeToString()
    status, answer = under_attack(
        collector, lambda: collector.post(CONNECT_PUSH, body, None, CONNECT_PROTO)
    )
    assert status == 400 and "limit of 32 MB" in json.loads(answer)["message"]
    status, answer = collector.post(CONNECT_PUSH, b"[" * 100_000, None, CONNECT_JSON)
    assert status == 400 and "not a valid push.v1.PushRequest" in json.loads(answer)["message"]


def test_large_bodies_at_once_stay_within_memory(collector: Collector) -> None:
    """Six 30 MB bodies at once: each stored, refused for its content, or told to retry
    (503, the bodies held past the limit); memory stays bounded."""
    line = b"main;" + b";".join(b"f%d" % i for i in range(30)) + b" 1\n"
    body = line * ((30 << 20) // len(line))

    def six_at_once() -> list[int]:
        with ThreadPoolExecutor(6) as pool:
            answers = pool.map(lambda _: collector.post("/ingest", body, folded()), range(6))
            return [status for status, _ in answers]

    statuses = under_attack(collector, six_at_once)
    assert set(statuses) <= {200, 400, 503}, statuses


def open_connections(collector: Collector, n: int, first: bytes) -> list[socket.socket]:
    held = []
    for _ in range(n):
        conn = socket.create_connection(("127.0.0.1", collector.port), timeout=10)
        if first:
            conn.sendall(first)
        held.append(conn)
    return held


@pytest.mark.parametrize("first", [b"", b"POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n"])
@pytest.mark.parametrize("count", [63, 300])
def test_half_open_connections_take_no_request_slot(
    collector: Collector, count: int, first: bytes
) -> None:
    """Connections without a token that send nothing, or half their headers: pushes
    and /healthz are answered while they are held; past 64 that waited a second the
    oldest are closed, and all once they have waited 10 s."""
    held = open_connections(collector, count, first)
    try:
        assert under_attack(collector, lambda: time.sleep(1.5)) is None
        assert collector.post("/healthz", b"")[0] in (200, 405)
        assert closed_by_server(held, count - 64) >= count - 64
        assert closed_by_server(held, count) == count
    finally:
        for conn in held:
            conn.close()


def test_more_connections_than_are_held_close_the_oldest(collector: Collector) -> None:
    """700 connections opened within a second: at most 512 waiting ones are kept."""
    held = open_connections(collector, 700, b"")
    try:
        assert closed_by_server(held, 700 - 512) >= 700 - 512
        assert legit_push(collector)
    finally:
        for conn in held:
            conn.close()


def test_slowloris_headers_are_closed_after_the_header_timeout(collector: Collector) -> None:
    """A header byte a second does not keep a connection open (the header timeout closes
    it), and costs no slot."""
    held = open_connections(collector, 80, b"POST /ingest HTTP/1.1\r\n")
    try:
        deadline = time.monotonic() + CLOSE_BOUND_S
        while time.monotonic() < deadline and any(c.fileno() >= 0 for c in held):
            for conn in held:
                try:
                    conn.sendall(b"X")
                except OSError:
                    conn.close()
            assert legit_push(collector)
            time.sleep(1)
        assert all(c.fileno() < 0 for c in held), "a dripping connection was never closed"
    finally:
        for conn in held:
            conn.close()


def test_requests_without_a_token_are_refused_before_their_body(collector: Collector) -> None:
    """100 requests announcing 30 MB bodies they never send: each is answered 401 at
    once and holds no slot, so pushes with the token go on."""
    head = (
        b"POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 31457280\r\n"
        b"Content-Type: text/plain\r\n\r\nmain;a 1\n"
    )
    held = open_connections(collector, 100, head)
    try:
        for conn in held:
            conn.settimeout(10)
            assert conn.recv(4096).startswith(b"HTTP/1.1 401")
        assert under_attack(collector, lambda: time.sleep(1)) is None
    finally:
        for conn in held:
            conn.close()
