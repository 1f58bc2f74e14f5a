"""A real OpenTelemetry Collector (v0.165.0: otlp receiver, otlphttp and otlp exporters)
forwards OTLP profiles to a real perfsleuth collector on 127.0.0.1: over HTTP, in the
otlphttp exporter's protobuf encoding, in its JSON one and compressed by zstd, snappy (a
block and framed) and lz4; and over gRPC, by the `otlp` exporter (`otlp_grpc` in
v0.165.0's configuration), gzipped as it sends by default, to the collector's one port
(HTTP/2 spliced to its gRPC server, as Pyroscope serves gRPC on its HTTP port) and to
its --grpc port.

The profile pushed into the OTel Collector's receiver is a real run's: pyroscope-go
v1.5.0's captured CPU pprof (its `pprof.Do` label phase=a on most samples), turned into
an OTLP ExportProfilesServiceRequest here with opentelemetry-proto, its resource
attributes plain as an SDK writes them. The OTel Collector decodes it into its pdata and
its exporter encodes it again as it does for any backend (attributes into the
dictionary's tables, gzip): what perfsleuth stored is read back with `fleet top` and
checked against the pprof: labels, hot functions, totals. `make setup` builds the
collector (tests/clients/otelcol/, scripts/install-clients.sh).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
    ExportProfilesServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
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

from perfsleuth.formats import profile_pb2

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

OTELCOL = Path(sys.prefix) / "clients" / "otelcol"  # built by scripts/install-clients.sh
RESOURCE = {
    "service.name": "otel-shop",
    "host.name": "otel-host-1",
    "service.version": "4.2.0",
    "k8s.namespace.name": "checkout",
    "service.instance.id": "9b1c-one-per-process",
}
PERIOD_NS = 10_000_000
STARTED_S = 60  # bound on the OTel Collector's start


class _Strings:
    def __init__(self) -> None:
        self.table = [""]
        self.index = {"": 0}

    def __call__(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.table)
            self.table.append(text)
        return self.index[text]


def otlp_request(pprof: profile_pb2.Profile, now_s: int) -> ExportProfilesServiceRequest:
    """The pprof's CPU time as one OTLP profile (cpu/nanoseconds, its 10 ms period):
    its functions, inlined lines and stacks in the dictionary, its string labels as
    sample attributes, RESOURCE as plain resource attributes."""
    names = pprof.string_table
    cpu = [names[t.type] for t in pprof.sample_type].index("cpu")
    s = _Strings()
    d = otlp.ProfilesDictionary(
        mapping_table=[otlp.Mapping()],
        attribute_table=[otlp.KeyValueAndUnit()],
        stack_table=[otlp.Stack()],
    )
    mappings = {}
    for m in pprof.mapping:
        mappings[m.id] = len(d.mapping_table)
        d.mapping_table.add(
            memory_start=m.memory_start,
            memory_limit=m.memory_limit,
            file_offset=m.file_offset,
            filename_strindex=s(names[m.filename]),
        )
    functions = {}
    d.function_table.add()
    for f in pprof.function:
        functions[f.id] = len(d.function_table)
        d.function_table.add(
            name_strindex=s(names[f.name]),
            system_name_strindex=s(names[f.system_name]),
            filename_strindex=s(names[f.filename]),
            start_line=f.start_line,
        )
    locations = {}
    d.location_table.add()
    for loc in pprof.location:
        locations[loc.id] = len(d.location_table)
        lines = [otlp.Line(function_index=functions[n.function_id], line=n.line) for n in loc.line]
        d.location_table.add(
            mapping_index=mappings.get(loc.mapping_id, 0), address=loc.address, lines=lines
        )
    profile = otlp.Profile(
        sample_type=otlp.ValueType(type_strindex=s("cpu"), unit_strindex=s("nanoseconds")),
        period_type=otlp.ValueType(type_strindex=s("cpu"), unit_strindex=s("nanoseconds")),
        period=PERIOD_NS,
        time_unix_nano=(now_s - 10) * 10**9,
        duration_nano=10 * 10**9,
    )
    attribute_at: dict[tuple[str, str], int] = {}
    for sample in pprof.sample:
        attributes = []
        for label in sample.label:
            pair = (names[label.key], names[label.str])
            if pair not in attribute_at:
                attribute_at[pair] = len(d.attribute_table)
                value = AnyValue(string_value=pair[1])
                d.attribute_table.add(key_strindex=s(pair[0]), value=value)
            attributes.append(attribute_at[pair])
        d.stack_table.add(location_indices=[locations[i] for i in sample.location_id])
        profile.samples.add(
            stack_index=len(d.stack_table) - 1,
            values=[sample.value[cpu]],
            attribute_indices=attributes,
        )
    d.string_table.extend(s.table)
    resource = otlp.ResourceProfiles()
    for key, value in RESOURCE.items():
        resource.resource.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    scope = resource.scope_profiles.add()
    scope.scope.name = "perfsleuth-test"
    scope.profiles.append(profile)
    return ExportProfilesServiceRequest(resource_profiles=[resource], dictionary=d)


def pushed_self(pprof: profile_pb2.Profile, label: tuple[str, str] | None = None) -> Counter:
    """CPU nanoseconds per leaf function (the first line of a sample's first location),
    of the samples with `label` (all when None)."""
    names = pprof.string_table
    cpu = [names[t.type] for t in pprof.sample_type].index("cpu")
    function = {f.id: names[f.name] for f in pprof.function}
    leaf = {loc.id: function[loc.line[0].function_id] for loc in pprof.location}
    out: Counter = Counter()
    for sample in pprof.sample:
        labels = {(names[x.key], names[x.str]) for x in sample.label}
        if label is None or label in labels:
            out[leaf[sample.location_id[0]]] += sample.value[cpu]
    return out


def config(
    receiver_port: int, collector: Collector, encoding: str = "proto", grpc_port: int = 0
) -> str:
    """The OTel Collector's configuration: OTLP/HTTP in on 127.0.0.1, out to perfsleuth
    with its token: by the otlphttp exporter in `encoding` (proto or json, `+zstd` and such
    for that compression instead of its default gzip), or with `grpc` by the otlp
    exporter (`otlp_grpc`, plaintext) to `grpc_port`, else to the collector's one port;
    no queue and
    no retry, so that the receiver answers a push only once perfsleuth has, with
    perfsleuth's refusal if any; no telemetry port of its own."""
    common = {
        "headers": {"Authorization": f"Bearer {TOKEN}"},
        "compression": (encoding.split("+")[1:] or ["gzip"])[0],
        "sending_queue": {"enabled": False},
        "retry_on_failure": {"enabled": False},
    }
    if encoding.startswith("grpc"):
        name = "otlp_grpc"
        port = grpc_port or collector.port
        exporter = {"endpoint": f"127.0.0.1:{port}", "tls": {"insecure": True}}
    else:
        name = "otlphttp"
        exporter = {"endpoint": collector.url(""), "encoding": encoding.split("+")[0]}
    return json.dumps(
        {
            "receivers": {
                "otlp": {"protocols": {"http": {"endpoint": f"127.0.0.1:{receiver_port}"}}}
            },
            "exporters": {name: exporter | common},
            "service": {
                "telemetry": {"metrics": {"level": "none"}},
                "pipelines": {"profiles": {"receivers": ["otlp"], "exporters": [name]}},
            },
        }
    )


def listening(port: int, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + STARTED_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


@pytest.fixture(
    scope="module",
    params=[
        "proto",
        "json",
        "proto+zstd",
        "proto+snappy",
        "proto+x-snappy-framed",
        "proto+lz4",
        "grpc",
        "grpc-port",
    ],
)
def encoding(request: pytest.FixtureRequest) -> str:
    """The exporter's encoding: its default protobuf, or JSON (`encoding: json`: a 415
    before perfsleuth read OTLP/JSON), or protobuf compressed by zstd, snappy (a raw
    block), snappy's framing format or lz4 (each a 415 before perfsleuth read them); or
    the otlp exporter over gRPC: `grpc` to the collector's one port, as to Pyroscope's,
    `grpc-port` to its --grpc port (neither served before)."""
    return str(request.param)


@pytest.fixture(scope="module")
def grpc_port(encoding: str) -> int:
    """The perfsleuth collector's --grpc port (0: none)."""
    return free_port() if encoding == "grpc-port" else 0


@pytest.fixture(scope="module")
def collector(
    tmp_path_factory: pytest.TempPathFactory, encoding: str, grpc_port: int
) -> Iterator[Collector]:
    grpc = ["--grpc", f"127.0.0.1:{grpc_port}"] if grpc_port else []
    running = start(tmp_path_factory.mktemp(f"fleet-{encoding}"), "--token", TOKEN, *grpc)
    if grpc_port:
        assert listening(grpc_port, running.proc), "the collector's gRPC port did not open"
    yield running
    assert "Traceback" not in stop(running)


@pytest.fixture(scope="module")
def otelcol(
    tmp_path_factory: pytest.TempPathFactory, collector: Collector, encoding: str, grpc_port: int
) -> Iterator[int]:
    """A running OTel Collector forwarding to `collector` in `encoding`: its receiver's
    port."""
    if not shutil.which("go"):
        pytest.skip("Go is not installed: the OpenTelemetry Collector cannot be built")
    assert OTELCOL.exists(), (
        f"{OTELCOL} is missing: `make setup` builds it (scripts/install-clients.sh); "
        "its build failed or was not run"
    )
    port = free_port()
    path = tmp_path_factory.mktemp("otelcol") / "config.json"
    path.write_text(config(port, collector, encoding, grpc_port))
    log = path.with_name("otelcol.log")
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(OTELCOL), f"--config={path}", "--feature-gates=service.profilesSupport"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        assert listening(port, proc), f"the OTel Collector did not listen: {log.read_text()}"
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def top(collector: Collector, where: str) -> dict:
    out = subprocess.run(
        [str(PERFSLEUTH), "fleet", "top", "--store", str(collector.store), "--from", "1h"]
        + ["--where", where, "--format", "json", "-n", "100"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def self_ns(doc: dict) -> dict[str, float]:
    return {row["function"]: row["self"] * doc["total"] for row in doc["rows"] if row["self"]}


def test_a_profile_through_the_otel_collector_is_stored_as_pushed(
    collector: Collector, otelcol: int, encoding: str
) -> None:
    pprof = captured_pprof("cpu")
    body = otlp_request(pprof, int(time.time())).SerializeToString()
    url = f"http://127.0.0.1:{otelcol}/v1development/profiles"
    status, answer = request(url, body, {"Content-Type": "application/x-protobuf"})
    assert status == 200, answer
    # The OTel Collector always sets partial_success, empty when nothing was rejected.
    assert ExportProfilesServiceResponse.FromString(answer).partial_success.rejected_profiles == 0
    token = {"Authorization": f"Bearer {TOKEN}"}
    metrics = request(collector.url("/metrics"), None, token)[1].decode()
    endpoint = "otlp_grpc" if encoding.startswith("grpc") else "otlp"
    assert f'endpoint="{endpoint}",result="accepted"' in metrics, metrics

    where = ",".join(
        f"{k}={RESOURCE[v]}"
        for k, v in (
            ("service", "service.name"),
            ("host", "host.name"),
            ("version", "service.version"),
            ("k8s.namespace.name", "k8s.namespace.name"),
        )
    )
    stored = top(collector, where)
    pushed = pushed_self(pprof)
    assert stored["unit"] == "ns"
    assert stored["total"] == sum(pushed.values())
    assert stored["samples"] == sum(pushed.values()) // PERIOD_NS
    assert self_ns(stored) == pytest.approx(dict(pushed), abs=1)
    assert stored["rows"][0]["function"] == pushed.most_common(1)[0][0]

    instance = top(collector, f"service.instance.id={RESOURCE['service.instance.id']}")
    assert instance["total"] == 0  # a value per process is not a label

    tagged = top(collector, f"{where},phase=a")
    pushed_a = pushed_self(pprof, ("phase", "a"))
    assert 0 < tagged["total"] == sum(pushed_a.values()) < stored["total"]
    assert self_ns(tagged) == pytest.approx(dict(pushed_a), abs=1)
