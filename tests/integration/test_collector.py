"""perfsleuth collector over real HTTP on 127.0.0.1: every endpoint, limits, tokens, kill -9.

Each collector is a real `perfsleuth collector` process on a free port; what it
stored is read back from the Parquet files with DuckDB.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import duckdb
import pytest
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
    ExportProfilesServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp

from perfsleuth.collector.app import CONNECT_PUSH, INLINE_BODY, INLINE_INFLATED
from perfsleuth.fleet.engine import DuckDB, RangeQuery, register
from perfsleuth.formats import profile_pb2
from perfsleuth.formats.wire import push_pb2, window_pprof
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.store.fleet import FleetStore

PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
GO_PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "go-cpu.pb.gz"
PYROSCOPE_FIXTURES = GO_PROFILE.parent / "pyroscope"
TOKEN = "s3cret"
NOW = int(time.time())

pytestmark = pytest.mark.timeout(120)


@dataclass
class Collector:
    proc: subprocess.Popen
    port: int
    store: Path

    def url(self, path: str, query: dict | None = None) -> str:
        tail = "?" + urlencode(query) if query else ""
        return f"http://127.0.0.1:{self.port}{path}{tail}"

    def post(
        self, path: str, body: bytes, query: dict | None = None, headers: dict | None = None
    ) -> tuple[int, bytes]:
        sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
        return request(self.url(path, query), body, sent)

    def rows(self, sql: str) -> list[tuple]:
        """`sql` over the `samples` a query reads: the Parquet files and the head's log."""
        con = duckdb.connect()
        register(con, FleetStore(str(self.store)).select(0, 2**40), "samples")
        return con.sql(sql).fetchall()

    def totals(self) -> dict[tuple[str, str], int]:
        """Samples stored per (service, host), as a query reads them: from the Parquet
        files and the head's log of pushes acknowledged since its last flush."""
        store = FleetStore(str(self.store))
        if not store.has_data():
            return {}
        query = RangeQuery(store.select(0, 2**40), 0, 2**40, [])
        weights = DuckDB().label_weights(query, ["service", "host"])
        totals: Counter[tuple[str, str]] = Counter()
        for row in weights.to_pylist():
            totals[row["service"], row["host"]] += row["samples"]
        return dict(totals)


def request(url: str, body: bytes | None, headers: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(store: Path, *args: str, port: int | None = None) -> Collector:
    port = port or free_port()
    cmd = [str(PERFSLEUTH), "collector", "--listen", f"127.0.0.1:{port}", "--store", str(store)]
    proc = subprocess.Popen([*cmd, *args], stderr=subprocess.PIPE, text=True)
    collector = Collector(proc, port, store)
    for _ in range(200):
        try:
            if request(collector.url("/healthz"), None, {})[0] == 200:
                return collector
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"collector did not start: {proc.communicate()[1]}")


def stop(collector: Collector) -> str:
    collector.proc.send_signal(signal.SIGTERM)
    _, err = collector.proc.communicate(timeout=30)
    return err


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    store = tmp_path_factory.mktemp("fleet")
    running = start(store, "--token", "other", "--token", TOKEN, "--max-body", "1")
    yield running
    err = stop(running)
    # uvicorn drains the requests in flight, then ends by the signal it caught.
    assert running.proc.returncode == -signal.SIGTERM
    assert "Traceback" not in err


def folded_query(service: str, host: str) -> dict:
    return {
        "name": f"{service}.cpu{{host={host},env=test}}",
        "from": NOW - 10,
        "until": NOW,
        "sampleRate": 100,
        "spyName": "ebpfspy",
    }


def agent_window(window_id: str, host: str) -> Window:
    b = ProfileBuilder(unit="samples")
    main, work = Frame("main", dso="/usr/bin/app"), Frame("work", dso="/usr/bin/app")
    b.add([work, main], 17, count=17, thread=Thread(tid=11, pid=10, name="app"))
    return Window(
        id=window_id,
        start=NOW - 10,
        end=NOW,
        profile=b.build(),
        labels={"host": host, "service": "agent-svc"},
        processes={10: Process(exe="/usr/bin/app", build_id="feed", cgroup="/app")},
        rate_hz=19.0,
    )


def push_window(collector: Collector, window: Window, route: str = "") -> tuple[int, bytes]:
    """The agent's push (agent/sender.py), to its own route unless told another."""
    return collector.post(
        route or window_pprof.AGENT_ROUTE,
        window_pprof.encode(window),
        window_pprof.query(window),
        {window_pprof.WINDOW_HEADER: window.id, "Content-Type": "application/octet-stream"},
    )


def test_pyroscope_folded_push_is_stored_once(collector: Collector) -> None:
    body = b"main;handle;parse 30\nmain;handle;write 10\n"
    status, answer = collector.post("/ingest", body, folded_query("shop", "web-1"))
    assert status == 200 and json.loads(answer)["stored"] is True
    status, answer = collector.post("/ingest", body, folded_query("shop", "web-1"))
    assert status == 200 and json.loads(answer)["stored"] is False
    assert collector.totals()[("shop", "web-1")] == 40


def test_pyroscope_pprof_push_as_the_go_client_sends_it(collector: Collector) -> None:
    boundary = "perfsleuth-test-boundary"
    parts = [
        ("profile", "profile.pprof", GO_PROFILE.read_bytes()),
        ("sample_type_config", "sample_type_config.json", b'{"cpu": {"units": "samples"}}'),
    ]
    body = (
        b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{file}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
            for name, file, data in parts
        )
        + f"--{boundary}--\r\n".encode()
    )
    query = {**folded_query("goapp", "go-1"), "format": "pprof", "spyName": "gospy"}
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    status, answer = collector.post("/ingest", body, query, headers)
    assert status == 200, answer
    assert collector.totals()[("goapp", "go-1")] == json.loads(answer)["samples"] > 0


def test_agent_push_is_idempotent_and_keeps_process_labels(collector: Collector) -> None:
    window = agent_window("agent-a-1", "agent-host")
    assert json.loads(push_window(collector, window)[1])["stored"] is True
    assert json.loads(push_window(collector, window)[1])["stored"] is False
    rows = collector.rows(
        "select pid, comm, exe, build_id, cgroup, sum(samples)::bigint from samples "
        "where host = 'agent-host' group by all"
    )
    assert rows == [(10, "app", "/usr/bin/app", "feed", "/app", 17)]


def test_plain_pprof_push_takes_labels_from_the_query(collector: Collector) -> None:
    body = GO_PROFILE.read_bytes()
    status, _ = collector.post("/pprof", body, {"service": "batch", "host": "b-1", "team": "x"})
    assert status == 200
    assert collector.totals()[("batch", "b-1")] > 0


def otlp_request() -> ExportProfilesServiceRequest:
    strings = ["", "samples", "count", "cpu", "nanoseconds", "main", "work", "/usr/bin/svc"]
    strings += ["thread.id", "thread.name", "worker"]
    d = otlp.ProfilesDictionary(
        string_table=strings,
        mapping_table=[otlp.Mapping(), otlp.Mapping(filename_strindex=7)],
        function_table=[otlp.Function(), *(otlp.Function(name_strindex=i) for i in (5, 6))],
        location_table=[
            otlp.Location(),
            otlp.Location(mapping_index=1, lines=[otlp.Line(function_index=1)]),
            otlp.Location(mapping_index=1, lines=[otlp.Line(function_index=2)]),
        ],
        stack_table=[otlp.Stack(), otlp.Stack(location_indices=[2, 1])],
        attribute_table=[
            otlp.KeyValueAndUnit(),
            otlp.KeyValueAndUnit(key_strindex=8, value=AnyValue(int_value=4243)),
            otlp.KeyValueAndUnit(key_strindex=9, value=AnyValue(string_value="worker")),
        ],
    )
    profile = otlp.Profile(
        sample_type=otlp.ValueType(type_strindex=1, unit_strindex=2),
        period_type=otlp.ValueType(type_strindex=3, unit_strindex=4),
        period=50_000_000,
        time_unix_nano=(NOW - 10) * 10**9,
        duration_nano=10 * 10**9,
        samples=[otlp.Sample(stack_index=1, values=[12], attribute_indices=[1, 2])],
    )
    resource = otlp.ResourceProfiles(scope_profiles=[otlp.ScopeProfiles(profiles=[profile])])
    resource.resource.attributes.extend(
        [
            KeyValue(key="host.name", value=AnyValue(string_value="otel-1")),
            KeyValue(key="service.name", value=AnyValue(string_value="checkout")),
            KeyValue(key="process.pid", value=AnyValue(int_value=4242)),
        ]
    )
    return ExportProfilesServiceRequest(resource_profiles=[resource], dictionary=d)


def test_otlp_export_is_stored_and_answered(collector: Collector) -> None:
    body = otlp_request().SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    status, answer = collector.post("/v1development/profiles", body, headers=headers)
    assert status == 200
    assert not ExportProfilesServiceResponse.FromString(answer).HasField("partial_success")
    collector.post("/v1development/profiles", body, headers=headers)
    rows = collector.rows(
        "select pid, comm, sum(samples)::bigint, sum(cpu_ns)::bigint from samples "
        "where service = 'checkout' and host = 'otel-1' group by all"
    )
    assert rows == [(4242, "worker", 12, 12 * 50_000_000)]


def test_otlp_as_the_otel_collector_exporter_sends_it(collector: Collector) -> None:
    """The OTel Collector's otlphttp exporter (v0.165.0): gzip (its default compression),
    and resource attributes in the string-table form (key_strindex and
    string_value_strindex into the dictionary's string table); service.version is `version`."""
    request = otlp_request()
    strings = request.dictionary.string_table
    base = len(strings)
    strings.extend(["service.name", "cart", "host.name", "otel-2", "service.version", "9.1"])
    attributes = request.resource_profiles[0].resource.attributes
    del attributes[:]
    for k in range(3):
        value = AnyValue(string_value_strindex=base + 2 * k + 1)
        attributes.append(KeyValue(key_strindex=base + 2 * k, value=value))
    headers = {
        "Content-Type": "application/x-protobuf",
        "Content-Encoding": "gzip",
        "User-Agent": "OpenTelemetry Collector Contrib/0.165.0 (linux/amd64)",
    }
    body = gzip.compress(request.SerializeToString())
    status, answer = collector.post("/v1development/profiles", body, headers=headers)
    assert status == 200, answer
    assert not ExportProfilesServiceResponse.FromString(answer).HasField("partial_success")
    rows = collector.rows(
        "select labels, sum(samples)::bigint, sum(cpu_ns)::bigint from samples "
        "where service = 'cart' and host = 'otel-2' group by all"
    )
    assert [(json.loads(labels).get("version"), n, ns) for labels, n, ns in rows] == [
        ("9.1", 12, 12 * 50_000_000)
    ]


def test_agent_status_is_kept(collector: Collector) -> None:
    status_doc = {"host": "agent-host", "samples_per_s": 19.5, "cpu_share": 0.004}
    status, _ = collector.post("/agent/status", json.dumps(status_doc).encode())
    assert status == 200
    docs = [json.loads(p.read_text()) for p in (collector.store / "hosts").glob("*.json")]
    assert any(d["host"] == "agent-host" and d["metrics"]["cpu_share"] == 0.004 for d in docs)


@pytest.mark.parametrize(
    ("path", "body", "query", "message"),
    [
        ("/ingest", b"main;a notanumber\n", "folded", "folded line 1"),
        ("/ingest", b"main;a -5\n", "folded", "folded line 1"),
        ("/ingest", b"main;\xff\xfe 3\n", "folded", "not UTF-8"),
        ("/ingest", b"main;a " + b"9" * 40 + b"\n", "folded", "folded line 1"),
        ("/ingest", b";".join([b"f"] * 5000) + b" 1\n", "folded", "deeper than"),
        ("/ingest", b"\x00garbage", "pprof", "not a valid pprof"),
        ("/pprof", b"\x08\x96\x01garbage", None, "not a valid pprof"),
        ("/v1development/profiles", b"\xff\xff\xff", None, "not a valid OTLP"),
        ("/agent/status", b'{"cpu": 1}', None, '"host"'),
    ],
)
def test_bad_payloads_get_400_with_the_reason_and_store_nothing(
    collector: Collector, path: str, body: bytes, query: str | None, message: str
) -> None:
    before = collector.totals()
    params = {**folded_query("bad", "bad-1"), "format": query} if query else None
    status, answer = collector.post(path, body, params, {"Content-Type": "application/x-protobuf"})
    assert status == 400
    assert message in answer.decode()
    assert collector.totals() == before


def test_bad_query_and_too_many_labels_are_refused(collector: Collector) -> None:
    labels = ",".join(f"k{i}=v" for i in range(40))
    cases = [
        ({**folded_query("x", "h"), "name": f"x.cpu{{{labels}}}"}, "at most 32"),
        ({**folded_query("x", "h"), "from": "nan"}, "finite"),
        ({**folded_query("x", "h"), "until": "1e400"}, "finite"),
        ({k: v for k, v in folded_query("x", "h").items() if k != "name"}, "name"),
    ]
    for query, message in cases:
        status, answer = collector.post("/ingest", b"main 1\n", query)
        assert status == 400 and message in answer.decode(), (query, answer)
    status, answer = collector.post(
        "/ingest", b"main 1\n", folded_query("x", "h"), {"X-Perfsleuth-Window": "../../etc"}
    )
    assert status == 400 and b"bad X-Perfsleuth-Window" in answer


def test_a_label_past_its_distinct_values_across_pushes_is_refused(tmp_path: Path) -> None:
    def push(running: Collector, env: str, body: bytes) -> tuple[int, bytes]:
        query = {**folded_query("card", "c-1"), "name": f"card.cpu{{host=c-1,env={env}}}"}
        return running.post("/ingest", body, query)

    running = start(tmp_path / "fleet", "--max-label-values", "2")
    try:
        assert push(running, "a", b"main 1\n")[0] == 200
        assert push(running, "b", b"main 2\n")[0] == 200
        status, answer = push(running, "c", b"main 4\n")
        assert status == 400 and b"label 'env' already has 2 distinct values" in answer
        assert push(running, "a", b"main 8\n")[0] == 200  # a value seen before still passes
        assert running.totals() == {("card", "c-1"): 1 + 2 + 8}
    finally:
        stop(running)

    restarted = start(tmp_path / "fleet", "--max-label-values", "2")  # the limit is kept
    try:
        status, answer = push(restarted, "c", b"main 16\n")
        assert status == 400 and b"label 'env' already has 2 distinct values" in answer
        assert push(restarted, "b", b"main 32\n")[0] == 200
        assert restarted.totals() == {("card", "c-1"): 1 + 2 + 8 + 32}
    finally:
        stop(restarted)


def test_tokens_are_required_and_checked(collector: Collector) -> None:
    url = collector.url("/ingest", folded_query("t", "t-1"))
    assert request(url, b"main 1\n", {})[0] == 401
    assert request(url, b"main 1\n", {"Authorization": "Bearer wrong"})[0] == 401
    assert request(url, b"main 1\n", {"Authorization": "Bearer other"})[0] == 200
    assert request(collector.url("/metrics"), None, {})[0] == 401
    assert request(collector.url("/healthz"), None, {})[0] == 200


def test_host_header_is_checked_on_loopback(collector: Collector) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    status, answer = request(collector.url("/metrics"), None, headers)
    assert status == 403 and b"evil.example" in answer


def test_body_and_decompression_limits(collector: Collector) -> None:
    before = collector.totals()
    big = b"main;a 1\n" * ((2 << 20) // 9)
    status, answer = collector.post("/ingest", big, folded_query("big", "b"))
    assert status == 413 and b"limit of 1 MB" in answer
    bomb = gzip.compress(b"main;a 1\n" * ((10 << 20) // 9))
    status, answer = collector.post(
        "/ingest", bomb, folded_query("bomb", "b"), {"Content-Encoding": "gzip"}
    )
    assert status == 413 and b"inflates past the limit of 1 MB" in answer
    pprof_bomb = gzip.compress(b"\0" * (9 << 20))
    status, answer = collector.post("/pprof", pprof_bomb, {"service": "bomb"})
    assert status == 400 and b"limit of 1 MB" in answer
    assert collector.totals() == before


def test_a_small_push_inflating_past_the_event_loops_share_is_stored(
    collector: Collector,
) -> None:
    """A small push is decoded on the event loop up to INLINE_INFLATED; one whose gzip
    inflates past that (within the limit) goes to a worker and is stored the same."""
    lines = b"".join(b"main;f%d 1\n" % i for i in range(20_000))
    body = gzip.compress(lines)
    assert len(body) <= INLINE_BODY and len(lines) > INLINE_INFLATED
    status, answer = collector.post("/ingest", body, folded_query("inflated", "i-1"))
    assert status == 200, answer
    assert collector.totals()[("inflated", "i-1")] == 20_000


def test_metrics_count_pushes(collector: Collector) -> None:
    collector.post("/ingest", b"main;m 2\n", folded_query("metrics", "m-1"))
    status, text = request(collector.url("/metrics"), None, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200
    assert b'perfsleuth_collector_pushes_total{endpoint="ingest",result="accepted"}' in text
    assert b"perfsleuth_collector_samples_total" in text


def test_non_loopback_listen_without_token_refuses_to_start(tmp_path: Path) -> None:
    cmd = [str(PERFSLEUTH), "collector", "--listen", "0.0.0.0:0", "--store", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--token" in done.stderr and "Traceback" not in done.stderr


def test_kill_9_mid_push_then_restart_stores_the_retry_exactly_once(tmp_path: Path) -> None:
    first = start(tmp_path, "--token", TOKEN)
    window = agent_window("agent-k-1", "killed-host")
    body = window_pprof.encode(window)
    path = f"{window_pprof.AGENT_ROUTE}?" + urlencode(window_pprof.query(window))
    with socket.create_connection(("127.0.0.1", first.port), timeout=10) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"X-Perfsleuth-Window: {window.id}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body[: len(body) // 2])
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=30)
    second = start(tmp_path, "--token", TOKEN, port=first.port)
    try:
        assert json.loads(push_window(second, window)[1])["stored"] is True
        assert json.loads(push_window(second, window)[1])["stored"] is False
        os.kill(second.proc.pid, signal.SIGKILL)
        second.proc.wait(timeout=30)
        third = start(tmp_path, "--token", TOKEN)
        assert json.loads(push_window(third, window)[1])["stored"] is False
        assert third.totals() == {("agent-svc", "killed-host"): 17}
    finally:
        for running in (second, locals().get("third")):
            if running is not None and running.proc.poll() is None:
                stop(running)


def test_the_agent_has_its_own_route_and_ingest_still_takes_its_windows(
    collector: Collector,
) -> None:
    """The agent pushes to /agent/windows; an older agent's push to Pyroscope's /ingest is
    the same window, stored once."""
    window = agent_window("agent-route-1", "route-host")
    status, answer = push_window(collector, window)
    assert status == 200 and json.loads(answer)["stored"] is True
    status, answer = push_window(collector, window, "/ingest")
    assert status == 200 and json.loads(answer)["stored"] is False


def captured_pprof(kind: str) -> profile_pb2.Profile:
    """The pprof of pyroscope-go v1.5.0's captured `kind` (cpu, heap, ...) push."""
    head = json.loads((PYROSCOPE_FIXTURES / f"go-1.5.0-{kind}.json").read_text())
    body = (PYROSCOPE_FIXTURES / f"go-1.5.0-{kind}.bin").read_bytes()
    boundary = head["content-type"].split("boundary=")[1]
    start = body.index(b"\r\n\r\n", body.index(b'name="profile"')) + 4
    end = body.index(f"\r\n--{boundary}".encode(), start)
    return profile_pb2.Profile.FromString(gzip.decompress(body[start:end]))


def scaled_heap(scale: int, shift_s: int) -> profile_pb2.Profile:
    """The captured heap profile, every value times `scale`, its time `shift_s` later."""
    profile = captured_pprof("heap")
    profile.time_nanos += shift_s * 10**9
    for sample in profile.sample:
        sample.value[:] = [v * scale for v in sample.value]
    return profile


def heap_push(
    scale: int, shift_s: int, config: dict, name: str = "heapdelta{host=h-delta}"
) -> tuple[bytes, dict, dict]:
    """The captured heap push, every value times `scale`, its time `shift_s` later,
    with the sample_type_config `config`, as pyroscope-go's multipart form."""
    boundary = "perfsleuth-test-boundary"
    parts = [
        ("profile", gzip.compress(scaled_heap(scale, shift_s).SerializeToString())),
        ("sample_type_config", json.dumps(config).encode()),
    ]
    form = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"'
        f"\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data in parts
    )
    query = {
        "name": name,
        "from": str((NOW - 20 + shift_s) * 10**9),
        "until": str((NOW - 10 + shift_s) * 10**9),
        "spyName": "gospy",
    }
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    return form + f"--{boundary}--\r\n".encode(), query, headers


def test_a_cumulative_heap_profile_is_stored_as_deltas(collector: Collector) -> None:
    """A client that says alloc_space is cumulative (`"cumulative": true`, as
    pyroscope-go did before godeltaprof): its first push is the baseline, the next is
    stored as the difference; inuse_space, not cumulative, as pushed."""
    config = {
        "alloc_objects": {"units": "objects", "cumulative": True},
        "alloc_space": {"units": "bytes", "cumulative": True},
        "inuse_objects": {"units": "objects", "aggregation": "average"},
        "inuse_space": {"units": "bytes", "aggregation": "average"},
    }
    first = heap_push(1, 0, config)
    status, answer = collector.post("/ingest", first[0], first[1], first[2])
    assert status == 200, answer
    baseline = collector.rows(
        "select type, sum(cpu_ns)::bigint from samples where service = 'heapdelta' group by all"
    )
    assert {t for t, _ in baseline} == {"inuse_objects", "inuse_space"}
    second = heap_push(3, 10, config)
    status, answer = collector.post("/ingest", second[0], second[1], second[2])
    assert status == 200, answer
    totals = dict(
        collector.rows(
            "select type, sum(cpu_ns)::bigint from samples where service = 'heapdelta' group by all"
        )
    )
    pushed = heap_totals()
    assert pushed["alloc_space"] > 0
    assert totals["alloc_space"] == 2 * pushed["alloc_space"]  # 3x - 1x
    assert totals["alloc_objects"] == 2 * pushed["alloc_objects"]
    assert totals["inuse_space"] == 4 * pushed["inuse_space"]  # 1x + 3x


def test_a_push_that_stores_nothing_says_why(collector: Collector) -> None:
    """The Java agent's push of an idle interval (a recording without a sample event,
    captured) stores nothing and says so; it was answered as a cumulative baseline. A
    push of only cumulative series' first profiles is their baseline."""
    head = json.loads((PYROSCOPE_FIXTURES / "java-2.9.2-idle.json").read_text())
    body = (PYROSCOPE_FIXTURES / "java-2.9.2-idle.bin").read_bytes()
    status, answer = collector.post(
        head["path"], body, headers={"Content-Type": head["content_type"]}
    )
    assert status == 200, answer
    empty = {"windows": [], "stored": False, "samples": 0, "baseline": False}
    assert json.loads(answer) == empty | {"reason": "no samples in the push"}
    every = dict.fromkeys(("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"))
    config = {kind: {"units": "bytes", "cumulative": True} for kind in every}
    form, query_, headers = heap_push(1, 0, config, "heapbaseline{host=h-base}")
    status, answer = collector.post("/ingest", form, query_, headers)
    assert status == 200 and json.loads(answer)["baseline"] is True, answer
    assert "baseline" in json.loads(answer)["reason"]
    metrics = request(collector.url("/metrics"), None, {"Authorization": f"Bearer {TOKEN}"})
    assert 'endpoint="ingest",result="empty"} 1' in metrics[1].decode()


def heap_totals() -> dict[str, int]:
    """The captured heap profile's total per sample type."""
    profile = captured_pprof("heap")
    names = [profile.string_table[t.type] for t in profile.sample_type]
    return {n: sum(s.value[i] for s in profile.sample) for i, n in enumerate(names)}


@pytest.mark.parametrize(
    ("service", "delta", "alloc_pushes", "inuse_pushes"),
    [
        ("connect-cumulative", "true", 2, 4),  # 3x - 1x: the first push is the baseline
        ("connect-deltas", "false", 4, 4),  # 1x + 3x, as pushed
        ("connect-unsaid", None, 4, 4),  # as pyroscope-io 1.4.0 sends its own windows
    ],
)
def test_a_connect_series_marked_delta_true_is_stored_as_deltas(
    collector: Collector, service: str, delta: str | None, alloc_pushes: int, inuse_pushes: int
) -> None:
    """Pyroscope's Connect push: a series labelled `__delta__="true"` holds totals since
    its process started, so its allocations are stored as what changed since its previous
    push; in-use memory is a snapshot, stored as pushed; `"false"` or no label: as pushed."""
    labels = [push_pb2.LabelPair(name="__name__", value="memory")]
    labels.append(push_pb2.LabelPair(name="service_name", value=service))
    if delta is not None:
        labels.append(push_pb2.LabelPair(name="__delta__", value=delta))
    headers = {"Content-Type": "application/proto"}
    for scale, shift_s in ((1, 0), (3, 10)):
        raw = gzip.compress(scaled_heap(scale, shift_s).SerializeToString())
        series = push_pb2.RawProfileSeries(
            labels=labels, samples=[push_pb2.RawSample(raw_profile=raw)]
        )
        body = push_pb2.PushRequest(series=[series]).SerializeToString()
        status, answer = collector.post(CONNECT_PUSH, body, headers=headers)
        assert status == 200, answer
    stored = dict(
        collector.rows(
            f"select type, sum(cpu_ns)::bigint from samples where service = '{service}' "
            "group by all"
        )
    )
    pushed = heap_totals()
    assert pushed["alloc_space"] > 0 and pushed["inuse_space"] > 0
    for kind in ("alloc_space", "alloc_objects"):
        assert stored[kind] == alloc_pushes * pushed[kind], kind
    for kind in ("inuse_space", "inuse_objects"):
        assert stored[kind] == inuse_pushes * pushed[kind], kind
