"""Pyroscope /ingest: query parameters, folded bodies, multipart pprof bodies."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from perfsleuth.formats.wire import pyroscope
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError, parse_name
from perfsleuth.model.fleet import Window

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GO_PROFILE = FIXTURES / "go-cpu.pb.gz"
QUERY = {"name": "shop.cpu{env=prod, region=eu}", "from": "1700000000", "until": "1700000010"}


def test_name_gives_service_and_user_labels() -> None:
    assert parse_name("my.awesome.app.cpu{env=staging,region=us-west-1}") == (
        "cpu",
        {"env": "staging", "region": "us-west-1", "service": "my.awesome.app"},
    )
    assert parse_name("{host=h1}") == ("cpu", {"host": "h1"})
    # a dot that is not a type's suffix is the app's own
    assert parse_name("my.app") == ("cpu", {"service": "my.app"})
    for bad in ("app{env}", "app{a=b}{c=d}", "app{bad key=1}"):
        with pytest.raises(PayloadError):
            parse_name(bad)


def test_params_defaults_and_checks() -> None:
    p = IngestParams.parse(QUERY, "w1")
    assert (p.start, p.end, p.sample_rate, p.format) == (1.7e9, 1.70000001e9, 100.0, "")
    assert p.labels == {"env": "prod", "region": "eu", "service": "shop"}
    for key, value, message in [
        ("from", "1700000000000000000000", "not a time"),
        ("from", "17000", "not a time"),
        ("until", "1600000000", "before"),
        ("sampleRate", "-1", "above 0"),
        ("sampleRate", "inf", "finite"),
    ]:
        with pytest.raises(PayloadError, match=message):
            IngestParams.parse({**QUERY, key: value}, "w1")


def test_folded_stacks_root_first_with_counts() -> None:
    params = IngestParams.parse({**QUERY, "sampleRate": "19"}, "w1")
    [window] = pyroscope.decode(b"main;a;b 10\n\nmain;c 5\r\n", params, "text/plain")
    p = window.profile
    stacks = {tuple(p.frames[f].function for f in s): c for s, _, c, _, _ in p.rows()}
    assert stacks == {("b", "a", "main"): 10, ("c", "main"): 5}
    assert window.rate_hz == 19.0 and window.labels["service"] == "shop"


@pytest.mark.parametrize(
    ("suffix", "kind", "rate"),
    [
        ("cpu", "cpu", 100.0),
        ("wall", "wall", 100.0),
        ("alloc_space", "alloc_space", 0.0),
        ("inuse_objects", "inuse_objects", 0.0),
        ("mutex_duration", "mutex_delay", 0.0),
        ("block_count", "block_contentions", 0.0),
        ("goroutines", "goroutines", 0.0),
    ],
)
def test_a_text_push_is_the_type_its_name_says(suffix: str, kind: str, rate: float) -> None:
    """Pyroscope stores `app.alloc_space{...}` folded stacks as allocated bytes, not CPU
    samples of a service named `app.alloc_space` (its ingest adapter reads the suffix)."""
    params = IngestParams.parse({**QUERY, "name": f"shop.{suffix}{{env=prod}}"}, "w1")
    [window] = pyroscope.decode(b"main;a 4096\n", params, "text/plain")
    assert (window.type, window.rate_hz, window.labels["service"]) == (kind, rate, "shop")
    assert window.cpu_ns(4096, 4096) == (4096 * 1e9 / 100 if rate else 4096)


def test_lines_is_a_stack_per_sample() -> None:
    """Pyroscope's `lines` format: each line one sample, no count (frames may hold
    spaces)."""
    params = IngestParams.parse({**QUERY, "format": "lines"}, "w1")
    body = b"main;a\nmain;a\n\nmain;operator new(unsigned long)\nmain;a\n"
    [window] = pyroscope.decode(body, params, "text/plain")
    p = window.profile
    stacks = {tuple(p.frames[f].function for f in s): c for s, _, c, _, _ in p.rows()}
    assert stacks == {("a", "main"): 3, ("operator new(unsigned long)", "main"): 1}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"main;a\n", "line 1"),
        (b"main 1\nmain;a 1.5\n", "line 2"),
        (b"main;a 99999999999999999\n", "line 1"),
        (b"ma\x01in 1\n", "control characters"),
        (b"\xc3\x28 1\n", "not UTF-8"),
        (b"main 1\nmain;" + b"f" * 16385 + b" 1\n", "line 2: a frame is 16385 characters"),
    ],
)
def test_bad_folded_lines_are_named(body: bytes, message: str) -> None:
    # twice: a stack refused once is refused again (the stacks kept across pushes are
    # the checked ones only)
    for _ in range(2):
        with pytest.raises(PayloadError, match=message):
            pyroscope.decode(body, IngestParams.parse(QUERY, "w1"), "text/plain")


def test_folded_stacks_seen_before_read_the_same() -> None:
    params = IngestParams.parse(QUERY, "w1")
    body = b"main;a;b 10\nmain;c 5\nmain;a;b 2\n"
    first, again = (pyroscope.decode(body, params, "text/plain")[0] for _ in range(2))
    reordered = pyroscope.decode(b"main;c 1\nmain;a;b 3\n", params, "text/plain")[0]
    for window, expected in ((first, 12), (again, 12), (reordered, 3)):
        p = window.profile
        stacks = {tuple(p.frames[f].function for f in s): c for s, _, c, _, _ in p.rows()}
        assert stacks[("b", "a", "main")] == expected
    assert [f.function for f in reordered.profile.frames] == ["main", "c", "a", "b"]


def test_stacks_kept_start_over_past_their_limit() -> None:
    one, two = pyroscope._entry_bytes("main;a;b", 3), pyroscope._entry_bytes("main;c", 2)
    kept = pyroscope._Stacks(limit=one + two - 1)
    assert kept.names("main;a;b", 1) == (("main", "a", "b"), ("b", "a", "main"))
    kept.names("main;c", 2)  # past the limit: the first is dropped
    assert list(kept.split) == ["main;c"] and kept.held_bytes == two


def test_the_limit_counts_each_name_not_only_the_text() -> None:
    """2-character names hold ~24 bytes a character (the reviewer's measure), not ~3."""
    short = ";".join(["ab"] * 1000)
    assert pyroscope._entry_bytes(short, 1000) > 20 * len(short)


def test_pprof_raw_or_in_a_multipart_profile_part() -> None:
    params = IngestParams.parse({**QUERY, "format": "pprof"}, "w1")
    [raw] = pyroscope.decode(GO_PROFILE.read_bytes(), params, "application/octet-stream")
    form = (
        b'--B\r\nContent-Disposition: form-data; name="profile"; filename="p.pprof"\r\n\r\n'
        + GO_PROFILE.read_bytes()
        + b"\r\n--B--\r\n"
    )
    [multipart] = pyroscope.decode(form, params, "multipart/form-data; boundary=B")
    assert multipart.profile.total == raw.profile.total > 0
    with pytest.raises(PayloadError, match="profile"):
        pyroscope.decode(b"--B\r\n\r\nx\r\n--B--\r\n", params, "multipart/form-data; boundary=B")
    with pytest.raises(PayloadError, match="not supported"):
        pyroscope.decode(b"", IngestParams.parse({**QUERY, "format": "trie"}, "w1"), "")


def test_a_pprof_without_from_and_until_takes_its_own_time() -> None:
    """`curl --data-binary @cpu.pprof '.../ingest?name=app&format=pprof'` (a plain Go
    pprof): 400 `missing query parameter from` before; Pyroscope takes it (as now)."""
    params = IngestParams.parse({"name": "plain", "format": "pprof"}, "w1")
    assert (params.start, params.end) == (None, None)
    [window, *_] = pyroscope.decode(GO_PROFILE.read_bytes(), params, "application/octet-stream")
    assert 1.5e9 < window.start < window.end and window.profile.total > 0
    for kind in ("folded", "jfr"):  # no time of their own
        with pytest.raises(PayloadError, match="missing query parameters from and until"):
            query = {"name": "plain", "format": kind}
            pyroscope.decode(b"a;b 1", IngestParams.parse(query, "w1"), "")
    with pytest.raises(PayloadError, match="until"):
        IngestParams.parse({"name": "plain", "from": "1700000000"}, "w1")


def test_from_and_until_relative_to_now_as_pyroscope_takes_them() -> None:
    """`from=now-10s&until=now` (Pyroscope's attime): a 400 'is not a number' before."""
    before = time.time()
    p = IngestParams.parse({**QUERY, "from": "now-10s", "until": "now"}, "w1")
    assert p.start is not None and p.end is not None
    assert before - 10 <= p.start <= p.end - 10 <= time.time() - 10
    for raw, seconds in (
        ("now-2min", 120),
        ("now-5m", 300),  # m is minutes, M months (a 400 before)
        ("now-1h30m", 5400),
        ("now-2hours", 7200),
        ("now-1d", 86400),
        ("now-5", 0),
    ):
        before = time.time()
        p = IngestParams.parse({**QUERY, "from": raw, "until": "now"}, "w1")
        assert p.start is not None and p.end is not None
        assert before - seconds <= p.start <= p.end - seconds
    for raw in ("now-10x", "yesterday", "now-"):
        with pytest.raises(PayloadError):
            IngestParams.parse({**QUERY, "from": raw}, "w1")


def test_a_pprof_sent_as_folded_says_which_format_to_give() -> None:
    params = IngestParams.parse(QUERY, "w1")
    with pytest.raises(PayloadError, match="not UTF-8 .*format=pprof"):
        pyroscope.decode(GO_PROFILE.read_bytes(), params, "application/octet-stream")


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("1700000000", "1700000010"),
        ("1700000000000", "1700000010000"),
        ("1700000000000000", "1700000010000000"),
        ("1700000000000000000", "1700000010000000000"),
    ],
)
def test_from_and_until_in_s_ms_us_or_ns(start: str, end: str) -> None:
    """Pyroscope tells the unit by magnitude; the Go SDK sends nanoseconds."""
    p = IngestParams.parse({**QUERY, "from": start, "until": end}, "w1")
    assert (p.start, p.end) == (1.7e9, 1.70000001e9)


def go_push(kind: str) -> list[Window]:
    """A push pyroscope-go v1.5.0 sent (captured): multipart, no format=, from in ns."""
    head = json.loads((FIXTURES / "pyroscope" / f"go-1.5.0-{kind}.json").read_text())
    query = dict(parse_qsl(urlsplit(head["path"]).query))
    body = (FIXTURES / "pyroscope" / f"go-1.5.0-{kind}.bin").read_bytes()
    return pyroscope.decode(body, IngestParams.parse(query, "go"), head["content-type"])


@pytest.mark.parametrize(
    ("kind", "types"),
    [
        ("cpu", {"cpu"}),
        ("heap", {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}),
        ("mutex", {"mutex_contentions", "mutex_delay"}),
        ("block", {"block_contentions", "block_delay"}),
        ("goroutine", {"goroutines"}),
    ],
)
def test_the_go_sdk_pushes_each_profile_type(kind: str, types: set[str]) -> None:
    windows = go_push(kind)
    assert {w.type for w in windows} == types
    for window in windows:
        assert window.labels["service"] == "goapp" and window.labels["team"] == "sre"
        assert "__session_id__" not in window.labels
        assert 1.7e9 < window.start < window.end < window.start + 60
        assert window.rate_hz == 0.0


def test_the_go_sdk_cpu_push_keeps_its_labels_and_counts() -> None:
    windows = go_push("cpu")
    tagged = [w for w in windows if w.labels.get("phase") == "a"]
    assert tagged and all(w.profile.unit == "ns" for w in windows)
    functions = {p.frames[s[0]].function for w in tagged for p in [w.profile] for s in p.stacks}
    assert "main.hotA" in functions and "main.hotB" not in functions
    for window in windows:  # samples/count counts samples; cpu/nanoseconds is 10 ms each
        assert window.profile.total == window.profile.num_samples * 10_000_000


def test_heap_values_and_counts() -> None:
    by_type = {w.type: w.profile for w in go_push("heap")}
    assert by_type["alloc_space"].num_samples == by_type["alloc_objects"].total > 0
    assert by_type["alloc_space"].total > by_type["alloc_objects"].total


def test_a_node_wall_profile_with_cpu_time_is_stored_as_wall_and_cpu() -> None:
    """@pyroscope/nodejs with wall: {collectCpuTime: true}: samples/count, wall and cpu in
    one pprof; the CPU time was dropped (only the first time type was read)."""
    head = json.loads((FIXTURES / "pyroscope" / "node-0.6.4-wall-cpu.json").read_text())
    query = dict(parse_qsl(urlsplit(head["path"]).query))
    body = (FIXTURES / "pyroscope" / "node-0.6.4-wall-cpu.bin").read_bytes()
    windows = pyroscope.decode(body, IngestParams.parse(query, "n"), head["content_type"])
    expected = head["expected"]
    by_type: dict[str, list[Window]] = {}
    for window in windows:
        by_type.setdefault(window.type, []).append(window)
        assert window.profile.unit == "ns" and window.labels["team"] == "sre"
    assert sum(w.profile.total for w in by_type["wall"]) == expected["wall"]
    assert sum(w.profile.num_samples for w in by_type["wall"]) == expected["samples"]
    cpu = by_type["cpu"]
    assert sum(w.profile.total for w in cpu) == expected["cpu"]
    # each sample with CPU time is one sample at the profile's period (20 ms), at least one
    assert 0 < sum(w.profile.num_samples for w in cpu) <= expected["samples"]
    assert {w.labels.get("phase") for w in cpu} == {"a", None}
