"""OTLP profiles (v1development ExportProfilesServiceRequest, HTTP/protobuf or HTTP/JSON,
as the OTel Collector's otlphttp exporter sends with `encoding: json`) as fleet Windows.

Windows per profile of each resource: host.name, service.name, service.version and
the deployment environment (attributes of the resource, the scope or the profile, the
most specific winning; keys and string values plain or as string-table indices,
`key_strindex` and `string_value_strindex`, as the OTel Collector's exporter writes
them) become the window's labels host, service, version and env; the attributes of
SHARED_LABELS (cluster, namespace, workload, cloud region, runtime: values shared by
many processes) are labels under their own names; process.pid, thread.id, thread.name,
process.executable.*, container.id (on the resource, the profile or the sample, the
most specific winning) give each sample its thread and process; a sample's other
string attributes are labels of that sample: one window per set of them, as a pprof's
string labels. Stacks are read through the request's shared dictionary, every index
checked. A sample stands for its value in samples when its type counts them, else one
sample per timestamp, else its time over the profile's period (CPU nanoseconds).
Each profile keeps its type (CPU, wall, allocations, locks, ...: window_pprof's names);
one of a type perfsleuth does not store is skipped and counted, as the OTLP
partial-success answer expects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
    ExportProfilesServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp

from perfsleuth.formats.wire import ingest, window_pprof
from perfsleuth.formats.wire.ingest import PayloadError
from perfsleuth.model.fleet import DEFAULT_TYPE, Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread

PROTOBUF = "application/x-protobuf"
JSON = "application/json"  # OTLP/JSON: protobuf's JSON mapping
# Resource attributes that become window labels (semantic conventions -> perfsleuth).
WINDOW_LABELS = {
    "host.name": "host",
    "service.name": "service",
    "service.version": "version",
    "deployment.environment.name": "env",
    "deployment.environment": "env",
}
# Resource attributes kept as labels under their own names: what a fleet is filtered and
# grouped by, with a value shared by many processes. Per-process ones (service.instance.id,
# k8s.pod.name and .uid, process.command_line) are left out: a label with a value per
# process would make every push a new series and run into the collector's cardinality
# limit (collector/cardinality.py).
SHARED_LABELS = frozenset(
    {
        "service.namespace",
        "k8s.cluster.name",
        "k8s.namespace.name",
        "k8s.node.name",
        "k8s.deployment.name",
        "k8s.statefulset.name",
        "k8s.daemonset.name",
        "k8s.cronjob.name",
        "k8s.container.name",
        "container.image.name",
        "cloud.provider",
        "cloud.platform",
        "cloud.region",
        "cloud.availability_zone",
        "host.arch",
        "os.type",
        "process.runtime.name",
        "process.runtime.version",
        "telemetry.sdk.language",
    }
)
EXE_KEYS = ("process.executable.path", "process.executable.name")
BUILD_ID_KEYS = ("process.executable.build_id.gnu", "process.executable.build_id.htlhash")
CPU_KINDS = ("cpu", "samples")
# Units under another name: UCUM's `ns`, as the Pyroscope Java agent's OTLP export says.
UNITS = {"ns": "nanoseconds"}
# Attributes that give a sample its thread and process (_thread), not labels.
THREAD_KEYS = frozenset(
    {"process.pid", "thread.id", "thread.name", "container.id", *EXE_KEYS, *BUILD_ID_KEYS}
)


def profile_type(kind: tuple[str, str]) -> str | None:
    """The profile type of an OTLP sample type: CPU (`cpu` ns, or `samples` at the
    period's rate), wall, or a heap, lock or goroutine type as a pprof names it."""
    if kind[0] in CPU_KINDS:
        return DEFAULT_TYPE
    if kind[1] == "nanoseconds" and kind[0] in window_pprof.TIME_TYPES:
        return window_pprof.TIME_TYPES[kind[0]]
    other = window_pprof.OTHER_TYPES.get(kind)
    return other.format(lock="mutex") if other else None


T = TypeVar("T")


@dataclass
class Export:
    """What one request holds: the windows to store and the profiles skipped."""

    windows: list[Window] = field(default_factory=list)
    skipped: int = 0
    reason: str = ""


def media_type(content_type: str) -> str:
    """The request's encoding, PROTOBUF or JSON; PayloadError for any other."""
    media = content_type.split(";")[0].strip().lower() or PROTOBUF
    if media not in (PROTOBUF, JSON):
        raise PayloadError(f"send OTLP profiles as HTTP/protobuf ({PROTOBUF}) or JSON ({JSON})")
    return media


def decode(
    body: bytes, request_id: str, limit: int = ingest.MAX_DECOMPRESSED, media: str = PROTOBUF
) -> Export:
    """The CPU profiles of a request (encoded as `media` says) as Windows with ids
    `request_id-N`."""
    data = ingest.gunzip(body, limit)
    try:
        if media == JSON:
            request = ExportProfilesServiceRequest()
            json_format.Parse(data, request, ignore_unknown_fields=True)
        else:
            request = ExportProfilesServiceRequest.FromString(data)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, RecursionError) as e:
        raise PayloadError(f"not a valid OTLP ExportProfilesServiceRequest ({e})") from e
    reader = _Dictionary(request.dictionary)
    export = Export()
    for resource in request.resource_profiles:
        attrs = reader.key_values(resource.resource.attributes, "resource")
        for scope in resource.scope_profiles:
            scoped = attrs | reader.key_values(scope.scope.attributes, "scope")
            for profile in scope.profiles:
                window_id = f"{request_id}-{len(export.windows) + export.skipped}"
                kind = reader.sample_type(profile)
                if profile_type(kind) is None:
                    export.skipped += 1
                    export.reason = f"not a profile type perfsleuth stores: {'/'.join(kind)}"
                    continue
                export.windows += reader.windows(profile, scoped, window_id)
    if not export.windows and not export.skipped:
        raise PayloadError("the request holds no profile")
    return export


def encode_answer(answer: ExportProfilesServiceResponse, media: str) -> bytes:
    """The answer in the request's own encoding, as OTLP/HTTP asks."""
    if media == JSON:
        return json_format.MessageToJson(answer, indent=None).encode()
    return answer.SerializeToString()


def _at(table: Sequence[T], index: int, what: str) -> T:
    if not 0 <= index < len(table):
        raise PayloadError(f"bad OTLP profile: {what} index {index} is out of range")
    return table[index]


class _Dictionary:
    """The request's shared tables, read with every index checked."""

    def __init__(self, d: otlp.ProfilesDictionary) -> None:
        self.d = d
        self._frames: dict[int, tuple[Frame, ...]] = {}
        self.budget = ingest.PushBudget()

    def string(self, index: int, what: str) -> str:
        return ingest.text(_at(self.d.string_table, index, f"{what} string"), what)

    def attributes(self, indices: Iterable[int], what: str) -> dict[str, str | int]:
        out: dict[str, str | int] = {}
        for index in indices:
            kv = _at(self.d.attribute_table, index, f"{what} attribute")
            key = self.string(kv.key_strindex, f"{what} attribute key")
            out[key] = self.scalar(kv.value, f"{what} attribute {key[:40]}")
        return out

    def key_values(self, pairs: Iterable[KeyValue], what: str) -> dict[str, str | int]:
        """Resource or scope attributes, their keys and string values plain or, as
        newer exporters write them, indices into the string table."""
        out: dict[str, str | int] = {}
        for kv in pairs:
            key = kv.key or self.string(kv.key_strindex, f"{what} attribute key")
            if key:
                out[key] = self.scalar(kv.value, f"{what} attribute {key[:40]}")
        return out

    def scalar(self, value: AnyValue, what: str) -> str | int:
        kind = value.WhichOneof("value")
        if kind == "int_value":
            return value.int_value
        if kind == "string_value":
            return ingest.text(value.string_value, what, ingest.MAX_LABEL_VALUE)
        if kind == "string_value_strindex":
            text = self.string(value.string_value_strindex, what)
            return ingest.text(text, what, ingest.MAX_LABEL_VALUE)
        return ""

    def sample_type(self, profile: otlp.Profile) -> tuple[str, str]:
        t = profile.sample_type
        unit = self.string(t.unit_strindex, "unit")
        return self.string(t.type_strindex, "sample type"), UNITS.get(unit, unit)

    def windows(self, profile: otlp.Profile, resource: dict, window_id: str) -> list[Window]:
        """The profile's Windows: one per set of its samples' user labels (ids
        `window_id`, `window_id.1`, ...), the first holding the unlabelled samples."""
        kind = self.sample_type(profile)
        start = profile.time_unix_nano / 1e9
        if not ingest.TIME_RANGE[0] <= start <= ingest.TIME_RANGE[1]:
            raise PayloadError(f"time_unix_nano={profile.time_unix_nano} is not a time")
        scope = resource | self.attributes(profile.attribute_indices, "profile")
        period_ns = self._period_ns(profile)
        builders: dict[tuple[tuple[str, str], ...], ProfileBuilder] = {}
        processes: dict[int, Process] = {}
        for i, sample in enumerate(profile.samples):
            own = self.attributes(sample.attribute_indices, f"sample {i}")
            attrs = scope | own
            value = _value(sample, i)
            user = _user_labels(own)
            builder = builders.get(user)
            if builder is None:
                unit = "ns" if kind[1] == "nanoseconds" else "samples"
                builder = builders[user] = ProfileBuilder(unit=unit, meta={"format": "otlp"})
            count = _count(sample, value, kind, period_ns)
            thread = _thread(attrs, processes)
            builder.add(self.stack(sample.stack_index, i), value, count=count, thread=thread)
        labels = _window_labels(scope)
        groups = sorted(builders.items()) or [((), ProfileBuilder(meta={"format": "otlp"}))]
        return [
            Window(
                id=ingest.part_id(window_id, n),
                start=start,
                end=start + profile.duration_nano / 1e9,
                profile=builder.build(),
                labels=ingest.labels(labels | dict(user), "resource and sample attributes"),
                processes=processes,
                rate_hz=1e9 / (period_ns or 1e7) if kind[0] == "samples" else 0.0,
                type=profile_type(kind) or DEFAULT_TYPE,
            )
            for n, (user, builder) in enumerate(groups)
        ]

    def stack(self, index: int, sample: int) -> list[Frame]:
        stack = _at(self.d.stack_table, index, f"sample {sample} stack")
        frames: list[Frame] = []
        for loc in stack.location_indices:
            frames.extend(self.location(loc))
            if len(frames) > ingest.MAX_STACK_DEPTH:
                raise PayloadError(
                    f"sample {sample} is deeper than {ingest.MAX_STACK_DEPTH} frames "
                    "(inlined lines counted)"
                )
        self.budget.spend(len(frames))
        return frames

    def location(self, index: int) -> tuple[Frame, ...]:
        cached = self._frames.get(index)
        if cached is None:
            cached = self._frames[index] = tuple(self._decode_location(index))
            self.budget.create(len(cached))
        return cached

    def _decode_location(self, index: int) -> Iterable[Frame]:
        loc = _at(self.d.location_table, index, "location")
        if len(loc.lines) > ingest.MAX_STACK_DEPTH:
            raise PayloadError(
                f"location {index} has {len(loc.lines)} lines; a stack holds at most "
                f"{ingest.MAX_STACK_DEPTH} frames"
            )
        mapping = _at(self.d.mapping_table, loc.mapping_index, "mapping")
        dso = self.string(mapping.filename_strindex, "mapping file")
        frame_type = self.attributes(loc.attribute_indices, "location").get("profile.frame.type")
        kernel = frame_type == "kernel" or dso.startswith("[kernel")
        if not loc.lines:
            yield Frame(f"0x{loc.address:x}", dso=dso, kernel=kernel)
            return
        last = len(loc.lines) - 1
        for i, line in enumerate(loc.lines):
            fn = _at(self.d.function_table, line.function_index, "function")
            name = self.string(fn.name_strindex, "function") or self.string(
                fn.system_name_strindex, "function"
            )
            file = self.string(fn.filename_strindex, "file")
            line_no = max(line.line, 0)
            yield Frame(name, dso=dso, file=file, line=line_no, inlined=i < last, kernel=kernel)

    def _period_ns(self, profile: otlp.Profile) -> int:
        """The profile's sampling period in nanoseconds; 0 when it says none."""
        unit = self.string(profile.period_type.unit_strindex, "period unit")
        if profile.period > 0 and UNITS.get(unit, unit) == "nanoseconds":
            return ingest.count(profile.period, "period")
        return 0


def _value(sample: otlp.Sample, index: int) -> int:
    """The sample's total: its values summed, or one per timestamp."""
    if not sample.values:
        return len(sample.timestamps_unix_nano)
    what = f"sample {index} value"
    return ingest.count(sum(ingest.count(v, what) for v in sample.values), what)


def _count(sample: otlp.Sample, value: int, kind: tuple[str, str], period_ns: int) -> int:
    """The samples a sample stands for: its value when the type counts samples, else one
    per timestamp, else its time over the period (a CPU time in nanoseconds), else one."""
    if kind[1] == "count" or kind[0] == "samples":
        return max(value, 1)
    if sample.timestamps_unix_nano:
        return len(sample.timestamps_unix_nano)
    if kind[1] == "nanoseconds" and period_ns:
        return max(round(value / period_ns), 1)
    return 1


def _window_labels(attrs: dict[str, str | int]) -> dict[str, str]:
    """The labels every sample of a profile shares: WINDOW_LABELS renamed, SHARED_LABELS
    as they are named."""
    labels = {k: str(v) for k, v in attrs.items() if v and k in SHARED_LABELS}
    return labels | {WINDOW_LABELS[k]: str(v) for k, v in attrs.items() if v and k in WINDOW_LABELS}


def _user_labels(own: dict[str, str | int]) -> tuple[tuple[str, str], ...]:
    """A sample's own string attributes but those of its thread and process (they give
    it its Thread) and the window's: labels of that sample, as a pprof's string labels."""
    return tuple(
        sorted(
            (k, v)
            for k, v in own.items()
            if isinstance(v, str)
            and v
            and k not in THREAD_KEYS
            and k not in WINDOW_LABELS
            and k not in SHARED_LABELS
        )
    )


def _thread(attrs: dict[str, str | int], processes: dict[int, Process]) -> Thread | None:
    pid, tid = attrs.get("process.pid"), attrs.get("thread.id")
    if not isinstance(pid, int) and not isinstance(tid, int):
        return None
    pid = ingest.count(pid if isinstance(pid, int) else 0, "process.pid")
    tid = ingest.count(tid if isinstance(tid, int) else 0, "thread.id")
    exe = next((str(attrs[k]) for k in EXE_KEYS if attrs.get(k)), "")
    build_id = next((str(attrs[k]) for k in BUILD_ID_KEYS if attrs.get(k)), "")
    process = Process(exe=exe, build_id=build_id, cgroup=str(attrs.get("container.id", "")))
    if process != Process():
        processes.setdefault(pid, process)
    name = attrs.get("thread.name") or attrs.get("process.executable.name") or ""
    return Thread(tid=tid, pid=pid, name=str(name))
