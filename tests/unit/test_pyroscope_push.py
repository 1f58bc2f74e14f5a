"""Pyroscope's Connect push (push.v1.PusherService/Push) decoded from the SDKs' own bodies.

The fixtures are pushes captured from the real SDKs, the HTTP body as sent, gzip
Content-Encoding included: pyroscope-io 1.4.0 (a Python program with hot_a under
tag_wrapper({"phase": "a"}) and hot_b outside it, tags={"team": "sre"}) and the Rust
SDK, crates.io pyroscope 2.1.5 (tests/clients/rust/: the same program, its tag set
with the agent's tag_wrapper; push-rust-2.1.5.json has the request's path and headers),
and the same SDK's jemalloc backend (`backend-jemalloc`, tikv-jemallocator 0.7.0 with
prof:true,lg_prof_sample:19, in a program whose keep_a keeps 64 KiB buffers and keep_b
16 KiB ones, forty of each, then 20 ms asleep; its headers are the CPU push's), and
pyroscope-otel 1.1.0 over pyroscope-io 1.4.0 (tests/clients/python_otel_app.py, 3 s: its
root spans handle_a and handle_b tag their samples with span_name, span_id, trace_id),
and pyroscope-io 1.4.0 with report_pid, report_thread_id and report_thread_name (the
first program, pid 17502, 4 s).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from google.protobuf import json_format

from perfsleuth.formats.wire import push_pb2, pyroscope_push
from perfsleuth.formats.wire.ingest import PayloadError
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Thread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "pyroscope" / "push-python-1.4.0.bin.gz"
RUST = FIXTURES / "pyroscope" / "push-rust-2.1.5.bin.gz"
RUST_JEMALLOC = FIXTURES / "pyroscope" / "push-rust-2.1.5-jemalloc.bin.gz"
OTEL = FIXTURES / "pyroscope" / "push-python-otel-1.1.0.bin.gz"
THREADS = FIXTURES / "pyroscope" / "push-python-1.4.0-threads.bin.gz"
LIMIT = 1 << 20


def body(fixture: Path = FIXTURE) -> bytes:
    return gzip.decompress(fixture.read_bytes())


def functions(window: Window) -> set[str]:
    p = window.profile
    return {p.frames[stack[0]].function for stack, *_ in p.rows()}


def test_the_sdk_push_becomes_one_window_per_label_set() -> None:
    windows = pyroscope_push.decode(body(), "application/proto", "c-1", LIMIT)
    by_phase = {w.labels.get("phase", ""): w for w in windows}
    assert set(by_phase) == {"", "a"}
    for window in windows:
        assert window.labels["service"] == "pyprog" and window.labels["team"] == "sre"
        assert window.labels["process.runtime.name"] == "cpython"
        assert "__name__" not in window.labels and "service_name" not in window.labels
        assert window.profile.unit == "ns" and window.rate_hz == 0.0
        assert window.start > 1.7e9
    assert "hot_a" in functions(by_phase["a"]) and "hot_b" not in functions(by_phase["a"])
    assert "hot_b" in functions(by_phase[""])
    assert {w.id for w in windows} == {"c-1-0-0", "c-1-0-0.1"}


def test_the_rust_sdk_push_keeps_its_names_tags_and_window() -> None:
    """pyroscope 2.1.5 (Rust): `process_cpu`, names demangled by the SDK without their
    hash, the tag_wrapper tag per sample, its 2 s upload interval as the window."""
    windows = pyroscope_push.decode(body(RUST), "application/proto", "r-1", LIMIT)
    by_phase = {w.labels.get("phase", ""): w for w in windows}
    assert set(by_phase) == {"", "a"}
    for window in windows:
        assert window.labels["service"] == "rust-app" and window.labels["team"] == "sre"
        assert window.labels["process.runtime.name"] == "rust"
        assert window.labels["otel.scope.name"] == "com.grafana.pyroscope/rust"
        assert window.type == "cpu" and window.profile.unit == "ns" and window.rate_hz == 0.0
        assert window.start > 1.7e9 and window.end - window.start == 2
    assert functions(by_phase["a"]) == {"rust_app::hot_a"}
    assert functions(by_phase[""]) == {"rust_app::hot_b"}


def test_the_rust_sdk_jemalloc_push_is_in_use_bytes() -> None:
    """`__name__="memory"`: jemalloc_pprof's own gzipped pprof, `inuse_space`/`bytes`, each
    value jemalloc's estimate for its stack, stored as sent: jemalloc's frames that took
    the stack (prof_backtrace_impl) are its leaves, as the SDK sends them."""
    (window,) = pyroscope_push.decode(body(RUST_JEMALLOC), "application/proto", "r-1", LIMIT)
    assert window.type == "inuse_space" and window.labels["service"] == "rust-mem"
    assert window.labels["team"] == "sre" and window.labels["process.runtime.name"] == "rust"
    p = window.profile
    kept = {name: 0.0 for name in ("rust_app::keep_a", "rust_app::keep_b")}
    for stack, weight in zip(p.sample_stack, p.sample_weight, strict=True):
        names = [p.frames[i].function for i in p.stacks[stack]]
        assert names[0] == "prof_backtrace_impl"
        kept[next(name for name in names if name in kept)] += weight
    assert sum(kept.values()) == p.total == 75_784_183  # the pprof's own sum
    assert kept["rust_app::keep_a"] > 2 * kept["rust_app::keep_b"]  # 4x the bytes, sampled


@pytest.mark.parametrize("fixture", [FIXTURE, RUST], ids=["python", "rust"])
def test_samples_are_counted_from_the_cpu_time_at_100_hz(fixture: Path) -> None:
    """The SDKs send CPU nanoseconds only; each 10 ms is one sample, not one per stack row."""
    for window in pyroscope_push.decode(body(fixture), "application/proto", "c-1", LIMIT):
        assert window.profile.num_samples == round(window.profile.total / 1e7)
        assert window.profile.num_samples > len(window.profile.sample_count)


def test_connect_json_gives_the_same_windows() -> None:
    request = push_pb2.PushRequest.FromString(body())
    as_json = json_format.MessageToJson(request).encode()
    proto = pyroscope_push.decode(body(), "application/proto", "c-1", LIMIT)
    json = pyroscope_push.decode(as_json, "application/json; charset=utf-8", "c-1", LIMIT)
    assert [(w.id, w.labels, w.profile.total) for w in json] == [
        (w.id, w.labels, w.profile.total) for w in proto
    ]


@pytest.mark.parametrize(
    ("data", "content_type", "message"),
    [
        (b"\xff\xff", "application/proto", "not a valid push.v1.PushRequest"),
        (b"{not json", "application/json", "not a valid push.v1.PushRequest"),
        (b"", "application/proto", "holds no profile"),
        (b"", "application/grpc", "not a Connect unary request"),
    ],
)
def test_bad_pushes_are_refused_with_the_reason(
    data: bytes, content_type: str, message: str
) -> None:
    with pytest.raises(PayloadError, match=message):
        pyroscope_push.decode(data, content_type, "c-1", LIMIT)


def test_too_many_profiles_are_refused() -> None:
    request = push_pb2.PushRequest()
    series = request.series.add()
    for _ in range(pyroscope_push.MAX_PROFILES + 1):
        series.samples.add(raw_profile=b"")
    with pytest.raises(PayloadError, match="at most"):
        pyroscope_push.decode(request.SerializeToString(), "application/proto", "c-1", LIMIT)


def test_span_names_are_labels_and_span_and_trace_ids_are_not() -> None:
    """pyroscope-otel 1.1.0: span_name a label (it was dropped); trace_id, a new value per
    request, not (it made a window per trace: 106 in a 3 s push, and past
    --max-label-values every push was refused)."""
    windows = pyroscope_push.decode(body(OTEL), "application/proto", "o-1", LIMIT)
    by_span: dict[str, int] = {}
    for window in windows:
        assert not {"span_id", "trace_id", "profile_id"} & set(window.labels)
        name = window.labels.get("span_name", "")
        by_span[name] = by_span.get(name, 0) + window.profile.total
        assert name != "handle_a" or "hot_b" not in functions(window)
    # the profile's own totals by span_name
    assert by_span == {"handle_a": 2_090_000_000, "handle_b": 740_000_000, "": 20_000_000}
    assert len(windows) == 3


def test_reported_pids_and_thread_ids_are_the_samples_threads() -> None:
    """pyroscope-io's report_pid and report_thread_id write pid and thread_id as text
    labels: they were user labels (a value per process and per thread: past
    --max-label-values every push refused), they are the samples' thread now."""
    windows = pyroscope_push.decode(body(THREADS), "application/proto", "t-1", LIMIT)
    cpu = [w for w in windows if w.type == "cpu"]
    assert {w.labels.get("phase", "") for w in cpu} == {"", "a"}
    for window in windows:
        assert not {"pid", "thread_id", "thread_name"} & set(window.labels)
    threads = {t for w in cpu for t in w.profile.threads}
    assert threads == {Thread(tid=140338077719424, pid=17502, name="MainThread")}
    assert sum(w.profile.total for w in cpu) == 4_130_000_000
