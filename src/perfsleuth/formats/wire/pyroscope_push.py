"""Pyroscope's push API: `push.v1.PusherService/Push` over the Connect protocol.

What pyroscope-io 1.x, Grafana Alloy and the other current Pyroscope clients send: a
PushRequest (push.proto), as protobuf (`application/proto`) or as Connect's JSON
mapping (`application/json`, profiles in base64), gzip as the HTTP Content-Encoding.
Each series has labels (`__name__` the profile type, `service_name` the application,
the client's tags) and raw pprof profiles; each profile becomes the Windows of a pprof
push (window_pprof.decode) with the series' labels, so per-sample labels stay labels.

A series labelled `__delta__="true"` holds totals since its process started (as Go's
runtime allocation, mutex and block profiles are): its types that accumulate
(CUMULATIVE_TYPES) are stored as deltas (collector/deltas.py), the series' first push
as its baseline. `"false"` (Alloy after it took the deltas itself, Pyroscope's OTLP
ingest) or no `__delta__` is stored as pushed: Pyroscope's v1 ingester took a series
without the label for cumulative allocations, but its v2 segment writer ignores the
label, and pyroscope-io 1.4.0 sends each window's own allocations without it.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from perfsleuth.formats.wire import ingest, window_pprof
from perfsleuth.formats.wire import push_pb2 as pb
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import Window

PROTO = "application/proto"
JSON = "application/json"
# The series label naming its profile type: process_cpu, memory, mutex, block, ...
NAME_LABEL = "__name__"
# The series label saying whether the client sent totals since its start ("true").
DELTA_LABEL = "__delta__"
# The pprof sample types a `__delta__="true"` series accumulates; in-use memory and
# goroutines are snapshots, CPU and wall time are sampled per window.
CUMULATIVE_TYPES = frozenset({"alloc_objects", "alloc_space", "contentions", "delay"})
# Series labels with a name of their own in the store.
RENAMED = {"service_name": "service", "host.name": "host", "hostname": "host"}
# The `__` labels a push is read by.
READ_LABELS = (NAME_LABEL, DELTA_LABEL)
# At most this many profiles per push: a client sends a handful every 10-15 s.
MAX_PROFILES = 256


def decode(body: bytes, content_type: str, request_id: str, limit: int) -> list[Window]:
    """The Windows of one PushRequest, ids `request_id-S-N` (series S, profile N)."""
    request = _request(body, content_type)
    profiles = sum(len(series.samples) for series in request.series)
    if not profiles:
        raise PayloadError("the push holds no profile")
    if profiles > MAX_PROFILES:
        raise PayloadError(f"the push holds {profiles} profiles; at most {MAX_PROFILES}")
    windows: list[Window] = []
    budget = ingest.PushBudget(limit)
    for s, series in enumerate(request.series):
        labels = series_labels(series.labels, f"series {s}")
        internal = {pair.name: pair.value for pair in series.labels if pair.name in READ_LABELS}
        cumulative = CUMULATIVE_TYPES if internal.get(DELTA_LABEL) == "true" else frozenset()
        for n, sample in enumerate(series.samples):
            params = IngestParams(
                window_id=f"{request_id}-{s}-{n}",
                start=None,
                end=None,
                labels=labels,
                lock="block" if internal.get(NAME_LABEL) == "block" else "mutex",
                cumulative=cumulative,
            )
            windows += window_pprof.decode(sample.raw_profile, params, limit, budget)
    return windows


def media_type(content_type: str) -> str:
    """The Connect codec a Content-Type names; PayloadError for any other."""
    media = content_type.split(";")[0].strip().lower()
    if media in (PROTO, JSON):
        return media
    raise PayloadError(
        f"Content-Type {media[:60]!r} is not a Connect unary request: send {PROTO} or {JSON}"
    )


def series_labels(pairs: Iterable[pb.LabelPair], what: str) -> dict[str, str]:
    """The labels a series' windows keep: `__`-prefixed ones (`__name__`, the type, and
    the clients' internal `__session_id__` and such) are not labels of the samples."""
    out: dict[str, str] = {}
    for pair in pairs:
        if not pair.name.startswith(ingest.INTERNAL) and pair.value:
            out[RENAMED.get(pair.name, pair.name)] = pair.value
    return ingest.labels(out, what)


def _request(body: bytes, content_type: str) -> pb.PushRequest:
    request = pb.PushRequest()
    try:
        if media_type(content_type) == JSON:
            json_format.Parse(body, request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, RecursionError) as e:
        raise PayloadError(f"not a valid push.v1.PushRequest ({str(e)[:200]})") from e
    return request
