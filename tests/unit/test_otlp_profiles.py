"""OTLP profiles (v1development): resource and sample attributes, the dictionary, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp

from perfsleuth.formats.wire import otlp_profiles
from perfsleuth.formats.wire.ingest import PayloadError
from perfsleuth.model.fleet import Process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
T0 = 1_700_000_000 * 10**9
STRINGS = [
    "",
    "samples",
    "count",
    "cpu",
    "nanoseconds",
    "main",
    "work",
    "/bin/svc",
    "thread.id",
    "thread.name",
    "process.executable.path",
    "container.id",
    "alloc_space",
    "bytes",
    "profile.frame.type",
    "kernel",
    "sys_read",
]


def kv(key: str, value: str | int) -> KeyValue:
    v = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
    return KeyValue(key=key, value=v)


def attr(key: int, value: str | int) -> otlp.KeyValueAndUnit:
    v = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
    return otlp.KeyValueAndUnit(key_strindex=key, value=v)


def request(samples: list[otlp.Sample], sample_type=(1, 2)) -> ExportProfilesServiceRequest:
    d = otlp.ProfilesDictionary(
        string_table=STRINGS,
        mapping_table=[otlp.Mapping(), otlp.Mapping(filename_strindex=7)],
        function_table=[otlp.Function(), *(otlp.Function(name_strindex=i) for i in (5, 6, 16))],
        location_table=[
            otlp.Location(),
            otlp.Location(mapping_index=1, lines=[otlp.Line(function_index=1)]),
            otlp.Location(mapping_index=1, lines=[otlp.Line(function_index=2)]),
            otlp.Location(lines=[otlp.Line(function_index=3)], attribute_indices=[5]),
        ],
        stack_table=[otlp.Stack(), otlp.Stack(location_indices=[3, 2, 1])],
        attribute_table=[
            otlp.KeyValueAndUnit(),
            attr(8, 77),
            attr(9, "worker"),
            attr(10, "/bin/svc"),
            attr(11, "c0ffee"),
            attr(14, "kernel"),
        ],
    )
    profile = otlp.Profile(
        sample_type=otlp.ValueType(type_strindex=sample_type[0], unit_strindex=sample_type[1]),
        period_type=otlp.ValueType(type_strindex=3, unit_strindex=4),
        period=10_000_000,
        time_unix_nano=T0,
        duration_nano=5 * 10**9,
        samples=samples,
    )
    resource = otlp.ResourceProfiles(scope_profiles=[otlp.ScopeProfiles(profiles=[profile])])
    resource.resource.attributes.extend(
        [
            kv("host.name", "h1"),
            kv("service.name", "api"),
            kv("process.pid", 70),
            kv("service.version", "1.4"),
            kv("k8s.pod.uid", "ignored"),
            kv("k8s.namespace.name", "shop"),
            kv("service.instance.id", "7f3a-per-process"),
        ]
    )
    return ExportProfilesServiceRequest(resource_profiles=[resource], dictionary=d)


def test_attributes_map_to_labels_threads_and_processes() -> None:
    sample = otlp.Sample(stack_index=1, values=[4], attribute_indices=[1, 2, 3, 4])
    export = otlp_profiles.decode(request([sample]).SerializeToString(), "r1")
    (window,) = export.windows
    assert window.id == "r1-0" and (window.start, window.end) == (1.7e9, 1.7e9 + 5)
    assert window.labels == {
        "host": "h1",
        "service": "api",
        "version": "1.4",
        "k8s.namespace.name": "shop",
    }
    assert window.rate_hz == 100.0
    assert window.processes == {70: Process(exe="/bin/svc", cgroup="c0ffee")}
    p = window.profile
    ((stack, _, count, t, _),) = list(p.rows())
    assert [p.frames[f].function for f in stack] == ["sys_read", "work", "main"]
    assert p.frames[stack[0]].kernel and not p.frames[stack[1]].kernel
    assert count == 4 and (p.threads[t].pid, p.threads[t].tid, p.threads[t].name) == (
        70,
        77,
        "worker",
    )


def test_timestamps_count_as_samples_and_other_types_keep_their_type() -> None:
    sample = otlp.Sample(stack_index=1, timestamps_unix_nano=[T0, T0 + 1, T0 + 2])
    (window,) = otlp_profiles.decode(request([sample]).SerializeToString(), "r").windows
    assert window.profile.num_samples == 3 and window.type == "cpu"
    heap = request([otlp.Sample(stack_index=1, values=[4096])], sample_type=(12, 13))
    (window,) = otlp_profiles.decode(heap.SerializeToString(), "r").windows
    assert (window.type, window.profile.total, window.rate_hz) == ("alloc_space", 4096, 0.0)
    unknown = request([otlp.Sample(stack_index=1, values=[1])], sample_type=(5, 13))
    export = otlp_profiles.decode(unknown.SerializeToString(), "r")
    assert export.windows == [] and export.skipped == 1 and "main/bytes" in export.reason


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (otlp.Sample(stack_index=9, values=[1]), "stack index 9"),
        (otlp.Sample(stack_index=1, values=[-1]), "negative"),
        (otlp.Sample(stack_index=1, values=[1], attribute_indices=[99]), "attribute index 99"),
    ],
)
def test_bad_indices_and_values_are_refused(sample: otlp.Sample, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        otlp_profiles.decode(request([sample]).SerializeToString(), "r")


def test_garbage_and_empty_requests_are_refused() -> None:
    with pytest.raises(PayloadError, match="not a valid OTLP"):
        otlp_profiles.decode(b"\xff\xff", "r")
    with pytest.raises(PayloadError, match="no profile"):
        otlp_profiles.decode(b"", "r")


def in_string_table(req: ExportProfilesServiceRequest) -> ExportProfilesServiceRequest:
    """The request as newer exporters (the OTel Collector's) encode it: resource and
    scope attribute keys and string values as indices into the string table."""
    strings = req.dictionary.string_table

    def index(text: str) -> int:
        if text not in strings:
            strings.append(text)
        return list(strings).index(text)

    for resource in req.resource_profiles:
        attributes = [*resource.resource.attributes]
        version = next(a for a in attributes if a.key == "service.version")
        scope = resource.scope_profiles[0].scope
        scope.attributes.append(KeyValue(key_strindex=index(version.key), value=version.value))
        del resource.resource.attributes[:]
        for a in attributes:
            if a.key == "service.version":
                continue  # on the scope only
            value = a.value
            if value.WhichOneof("value") == "string_value":
                value = AnyValue(string_value_strindex=index(value.string_value))
            resource.resource.attributes.append(KeyValue(key_strindex=index(a.key), value=value))
    for kv_unit in req.dictionary.attribute_table:
        if kv_unit.value.WhichOneof("value") == "string_value":
            kv_unit.value.CopyFrom(
                AnyValue(string_value_strindex=index(kv_unit.value.string_value))
            )
    return req


def test_attributes_in_the_string_table_encoding_are_kept() -> None:
    sample = otlp.Sample(stack_index=1, values=[4], attribute_indices=[1, 2, 3, 4])
    plain = otlp_profiles.decode(request([sample]).SerializeToString(), "r1")
    indexed = in_string_table(request([sample]))
    assert indexed.resource_profiles[0].resource.attributes[0].key == ""  # really indexed
    (window,) = otlp_profiles.decode(indexed.SerializeToString(), "r1").windows
    assert window.labels == plain.windows[0].labels
    assert window.labels["k8s.namespace.name"] == "shop" and window.labels["host"] == "h1"
    assert window.processes == plain.windows[0].processes == {70: Process("/bin/svc", "", "c0ffee")}
    assert [t.name for t in window.profile.threads] == ["worker"]


def test_a_string_index_out_of_the_table_is_refused() -> None:
    req = request([otlp.Sample(stack_index=1, values=[4])])
    req.resource_profiles[0].resource.attributes.append(KeyValue(key_strindex=999))
    with pytest.raises(PayloadError, match="index 999"):
        otlp_profiles.decode(req.SerializeToString(), "r")


def test_sample_string_attributes_are_labels_of_their_samples() -> None:
    """A sample's own string attributes (not its thread's or process's) are its labels:
    one window per set of them, as a pprof's string labels."""
    req = request([])
    table = req.dictionary.attribute_table
    req.dictionary.string_table.extend(["phase", "team"])
    phase, team = len(STRINGS), len(STRINGS) + 1
    table.extend([attr(phase, "a"), attr(team, "sre"), attr(phase, "b")])
    a, sre, b = len(table) - 3, len(table) - 2, len(table) - 1
    samples = req.resource_profiles[0].scope_profiles[0].profiles[0].samples
    for values, attributes in (([3], [1, a, sre]), ([5], [sre, b]), ([7], [2]), ([2], [a, sre])):
        samples.add(stack_index=1, values=values, attribute_indices=attributes)
    export = otlp_profiles.decode(req.SerializeToString(), "r1")
    totals = {
        (w.labels.get("phase"), w.labels.get("team")): w.profile.total for w in export.windows
    }
    assert totals == {(None, None): 7, ("a", "sre"): 5, ("b", "sre"): 5}
    assert all(
        w.labels["service"] == "api" and w.labels["version"] == "1.4" for w in export.windows
    )
    assert sorted(w.id for w in export.windows) == ["r1-0", "r1-0.1", "r1-0.2"]
    unlabelled = next(w for w in export.windows if "phase" not in w.labels)
    assert [t.name for t in unlabelled.profile.threads] == ["worker"]  # not a label


def test_cpu_nanoseconds_count_one_sample_per_period() -> None:
    """A CPU time without timestamps stands for its time over the period (10 ms) in
    samples, not one sample per stack (the OTel Collector's pprof-converted profiles)."""
    samples = [
        otlp.Sample(stack_index=1, values=[30_000_000]),
        otlp.Sample(stack_index=1, values=[4]),
    ]
    (window,) = otlp_profiles.decode(request(samples, (3, 4)).SerializeToString(), "r").windows
    assert (window.type, window.profile.unit, window.rate_hz) == ("cpu", "ns", 0.0)
    assert window.profile.total == 30_000_004 and window.profile.num_samples == 3 + 1


def test_the_java_agents_otlp_push_in_ucum_ns() -> None:
    """io.pyroscope:agent 2.9.2 with PYROSCOPE_FORMAT=otlp (captured: its gzipped body as
    sent, tests/clients/java/App.java under PYROSCOPE_PROFILER_EVENT=itimer): `itimer`
    in `ns` (UCUM), 10 ms a sample; the agent sends no service name nor labels."""
    body = (FIXTURES / "pyroscope" / "java-2.9.2-otlp.bin").read_bytes()
    export = otlp_profiles.decode(body, "r")
    (window,) = export.windows
    assert export.skipped == 0 and (window.type, window.profile.unit) == ("cpu", "ns")
    assert window.profile.total == 480_000_000 and window.profile.num_samples == 48
    p = window.profile
    leaves: dict[str, int] = {}
    for stack, _, count, _, _ in p.rows():
        name = p.frames[stack[0]].function
        leaves[name] = leaves.get(name, 0) + count
    assert max(leaves, key=leaves.__getitem__) == "App.hotA" and leaves["App.hotB"] > 0


def test_the_otel_collectors_json_push_reads_as_its_protobuf_push() -> None:
    """The OTel Collector v0.165.0's otlphttp exporter with `encoding: json` (captured,
    gzipped as sent: pyroscope-go's CPU pprof of tests/integration/test_otel_collector.py
    pushed into its receiver), and the same request with its default protobuf: the JSON
    one was a 415 (only HTTP/protobuf was read)."""
    pushed = {}
    for kind, media in (("json", otlp_profiles.JSON), ("proto", otlp_profiles.PROTOBUF)):
        body = (FIXTURES / "pyroscope" / f"otelcol-0.165.0-{kind}.bin").read_bytes()
        pushed[kind] = otlp_profiles.decode(body, "r", media=media).windows
    assert len(pushed["json"]) == len(pushed["proto"]) == 2  # phase=a and none
    for window, expected in zip(pushed["json"], pushed["proto"], strict=True):
        assert window.labels == expected.labels and window.labels["service"] == "otel-shop"
        assert (window.start, window.end, window.type) == (expected.start, expected.end, "cpu")
        assert sorted(window.profile.rows()) == sorted(expected.profile.rows())
        assert window.profile.total == expected.profile.total > 0


def test_the_request_encoding_is_told_by_its_content_type() -> None:
    assert otlp_profiles.media_type("") == otlp_profiles.PROTOBUF
    assert otlp_profiles.media_type("application/json; charset=utf-8") == otlp_profiles.JSON
    with pytest.raises(PayloadError, match="HTTP/protobuf .* or JSON"):
        otlp_profiles.media_type("text/plain")
    with pytest.raises(PayloadError, match="not a valid OTLP"):
        otlp_profiles.decode(b'{"resourceProfiles": 3}', "r", media=otlp_profiles.JSON)
    answer = otlp_profiles.ExportProfilesServiceResponse()
    answer.partial_success.rejected_profiles = 2
    assert otlp_profiles.encode_answer(answer, otlp_profiles.JSON) == (
        b'{"partialSuccess": {"rejectedProfiles": "2"}}'
    )
