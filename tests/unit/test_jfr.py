"""The Java agent's JFR push, read as the JDK's own `jfr` tool reads it.

The fixture is a real push of io.pyroscope:agent 2.9.2 (its multipart body as sent) and
the totals `jfr print --json` gave for its recording (tests/fixtures/pyroscope/
java-2.9.2-jfr.json says how both were made).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from perfsleuth.formats.wire import jfr, pyroscope
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import Window

PUSHES = Path(__file__).resolve().parents[1] / "fixtures" / "pyroscope"
DOC = json.loads((PUSHES / "java-2.9.2-jfr.json").read_text())
BODY = (PUSHES / "java-2.9.2-jfr.bin").read_bytes()
PARTS = pyroscope._parts(BODY, DOC["content_type"])
RECORDING = gzip.decompress(PARTS["jfr"])
LABELS = gzip.decompress(PARTS["labels"])


WALL = json.loads((PUSHES / "java-2.9.2-wall.json").read_text())


def params(doc: dict = DOC) -> IngestParams:
    return IngestParams.parse(dict(parse_qsl(urlsplit(doc["path"]).query)), "w1")


def push(body: bytes = BODY, content_type: str = DOC["content_type"]) -> list[Window]:
    return pyroscope.decode(body, params(), content_type)


def totals(windows: list[Window], where: dict[str, str] | None = None) -> dict[str, list[int]]:
    """[weight, count] by profile type, over the windows with the labels `where`."""
    found: dict[str, list[int]] = {}
    for w in windows:
        if (where or {}).items() <= w.labels.items():
            total = found.setdefault(w.type, [0, 0])
            total[0] += sum(w.profile.sample_weight)
            total[1] += sum(w.profile.sample_count)
    return found


def leaves(window: Window) -> dict[str, int]:
    p = window.profile
    counts: dict[str, int] = {}
    for stack, _, count, _, _ in p.rows():
        name = p.frames[stack[0]].function
        counts[name] = counts.get(name, 0) + count
    return counts


def test_the_agent_push_holds_what_the_jdk_reads_in_it() -> None:
    expected = DOC["expected"]
    found = totals(push())
    assert found == {
        "cpu": [expected["cpu"]] * 2,
        "alloc_objects": [expected["alloc_objects"]] * 2,
        "alloc_space": [expected["alloc_space"], expected["alloc_objects"]],
        "mutex_contentions": [expected["mutex_contentions"]] * 2,
        "mutex_delay": [expected["mutex_delay"], expected["mutex_contentions"]],
        "block_contentions": [expected["block_contentions"]] * 2,
        "block_delay": [expected["block_delay"], expected["block_contentions"]],
    }


def test_a_recording_without_sample_events_has_no_windows() -> None:
    """The agent's push of an idle interval (captured): nothing to store, no error."""
    idle = json.loads((PUSHES / "java-2.9.2-idle.json").read_text())
    body = (PUSHES / "java-2.9.2-idle.bin").read_bytes()
    assert pyroscope.decode(body, params(idle), idle["content_type"]) == []


def test_wall_clock_samples_and_the_runnable_ones_as_cpu() -> None:
    """PYROSCOPE_PROFILER_EVENT=wall: async-profiler's profiler.WallClockSample, each
    standing for `samples` samples of its thread, on CPU when it was STATE_RUNNABLE."""
    body = (PUSHES / "java-2.9.2-wall.bin").read_bytes()
    windows = pyroscope.decode(body, params(WALL), WALL["content_type"])
    expected = WALL["expected"]
    assert totals(windows) == {
        "wall": [expected["wall"]] * 2,
        "cpu": [expected["cpu"]] * 2,
    }
    assert totals(windows, {"phase": "a"})["wall"][1] == expected["wall_labelled"]
    assert {w.rate_hz for w in windows} == {100.0}


def test_labels_types_units_and_names() -> None:
    windows = push()
    for w in windows:
        assert w.labels["service"] == "java-app" and w.labels["team"] == "sre"
        assert w.profile.meta == {"format": "jfr", "spy": "javaspy"}
        assert w.rate_hz == (100.0 if w.type == "cpu" else 0.0)
        assert w.profile.unit == ("ns" if w.type.endswith("_delay") else "samples")
    # the LabelsWrapper section (hotA) through the labels part: per-sample labels
    labelled = totals(windows, {"phase": "a"})
    assert labelled["cpu"][1] == DOC["expected"]["cpu_labelled"]
    [tagged] = [w for w in windows if w.type == "cpu" and w.labels.get("phase") == "a"]
    assert set(leaves(tagged)) == {"App.hotA"}
    cpu = {}
    for w in windows:
        if w.type == "cpu":
            for name, count in leaves(w).items():
                cpu[name] = cpu.get(name, 0) + count
    assert sorted(cpu.items(), key=lambda kv: -kv[1])[:3] == list(
        DOC["expected"]["cpu_leaves"].items()
    )
    # JVM classes in their own form, lambdas without their number
    functions = {f.function for w in windows for f in w.profile.frames}
    assert "java/lang/Thread.run" in functions
    assert any(f.startswith("App$$Lambda_.") for f in functions)
    assert not any("0x" in f for f in functions if "$$Lambda" in f)


def test_chunks_after_chunks_plain_or_gzipped_without_multipart() -> None:
    once = totals(push())
    for body in (RECORDING * 2, gzip.compress(RECORDING * 2)):
        twice = totals(pyroscope.decode(body, params(), "application/octet-stream"))
        assert twice == {kind: [2 * v for v in values] for kind, values in once.items()}
    # without the labels part every sample is unlabelled
    windows = pyroscope.decode(RECORDING, params(), "")
    assert not any("phase" in w.labels for w in windows)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty"),
        (b"not a jfr recording at all, just text" * 3, "no chunk header"),
        (RECORDING[:60], "no chunk header"),
        (RECORDING[:1000], "size 112135 .the bytes left: 1000.; the recording is cut short"),
        (RECORDING[:4] + b"\0\1" + RECORDING[6:], "version 1, not 2"),
        # the features' bit 0 clear: fixed-width integers, which async-profiler never writes
        (RECORDING[:64] + b"\0\0\0\0" + RECORDING[68:], "fixed-width integers"),
        (RECORDING + b"FLR\0", "no chunk header at byte"),
        (RECORDING[:68] + b"\0" * (len(RECORDING) - 68), "event of 0 bytes"),
    ],
)
def test_bad_recordings_are_named(body: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        pyroscope.decode(body, params(), "")


def test_truncated_or_corrupt_input_is_a_payload_error() -> None:
    """Every cut and every change of bytes gives Windows or a PayloadError, nothing else."""
    size = len(RECORDING)
    patched = bytearray(RECORDING)
    patched[8:16] = (size - 100).to_bytes(8, "big")  # the chunk ends 100 bytes early
    with pytest.raises(PayloadError, match="bad JFR recording: an event of"):
        pyroscope.decode(bytes(patched[: size - 100]), params(), "")
    for cut in (100, 1000, size // 2, size - 1):  # a chunk header past the bytes sent
        with pytest.raises(PayloadError, match="bad JFR recording"):
            pyroscope.decode(RECORDING[:cut], params(), "")
    rng = random.Random(27)
    for _ in range(40):
        corrupt = bytearray(RECORDING)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(68, size)] = rng.randrange(256)
        with contextlib.suppress(PayloadError):
            pyroscope.decode(bytes(corrupt), params(), "")
    with pytest.raises(PayloadError, match="labels part is truncated"):
        jfr.decode(RECORDING, LABELS[:-3], params(), jfr.ingest.PushBudget())
    with pytest.raises(PayloadError, match="^the `labels` part: gzip data is truncated"):
        jfr.decode(RECORDING, PARTS["labels"][:-9], params(), jfr.ingest.PushBudget())
    with pytest.raises(PayloadError, match="^the `jfr` part: gzip data is truncated"):
        jfr.decode(PARTS["jfr"][:500], b"", params(), jfr.ingest.PushBudget())


def test_a_multipart_body_needs_its_jfr_part() -> None:
    boundary = DOC["content_type"].split("boundary=")[1]
    body = f'--{boundary}\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--{boundary}--'
    with pytest.raises(PayloadError, match="without a `jfr` part"):
        push(body.encode())


def test_the_push_budget_bounds_the_frames() -> None:
    budget = jfr.ingest.PushBudget()
    budget.created = jfr.ingest.MAX_PUSH_NEW_FRAMES - 5
    with pytest.raises(PayloadError, match="distinct frames"):
        jfr.decode(RECORDING, b"", params(), budget)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _nested_arrays(outer: int, inner: int) -> bytes:
    """A chunk (no real producer writes one) whose jdk.ExecutionSample holds `outer`
    values each holding an array of `inner` empty values: one byte per outer value."""
    strings = ["root", "metadata", "class", "field", "id", "name", "dimension", "1"]
    strings += ["100", "Outer", "101", "jdk.ExecutionSample", "x", "102", "Empty"]
    at = {s: _varint(i) for i, s in enumerate(strings)}

    def element(name: str, attributes: list[tuple[str, str]], children: list[bytes]) -> bytes:
        pairs = b"".join(at[k] + at[v] for k, v in attributes)
        return (
            at[name]
            + _varint(len(attributes))
            + pairs
            + _varint(len(children))
            + b"".join(children)
        )

    def array(name: str, of: str) -> bytes:
        return element("field", [("name", name), ("class", of), ("dimension", "1")], [])

    classes = [
        element("class", [("id", "100"), ("name", "Outer")], [array("x", "102")]),
        element("class", [("id", "101"), ("name", "jdk.ExecutionSample")], [array("x", "100")]),
        element("class", [("id", "102"), ("name", "Empty")], []),
    ]
    table = b"".join(b"\3" + _varint(len(s)) + s.encode() for s in strings)
    root = element("root", [], [element("metadata", [], classes)])
    metadata = b"\0\0\0\0" + _varint(len(strings)) + table + root
    sample = _varint(101) + _varint(outer) + _varint(inner) * outer

    def event(body: bytes) -> bytes:  # its size as a 4-byte varint, as the JDK pads it
        size = len(body) + 4
        return bytes([size >> 7 * i & 0x7F | (0x80 if i < 3 else 0) for i in range(4)]) + body

    events = event(metadata) + event(sample)
    size = jfr.HEADER.size + len(events)
    return jfr.HEADER.pack(jfr.MAGIC, 2, 0, size, 0, jfr.HEADER.size, 0, 0, 0, 10**9, 1) + events


def test_arrays_hold_at_most_an_item_per_byte_of_their_chunk() -> None:
    """Arrays of empty values take no bytes: what they expand to is bounded by the chunk's
    bytes, one item each (four let a 12 KB push cost the collector 14 CPU-s)."""
    assert jfr.decode(_nested_arrays(1000, 0), b"", params(), jfr.ingest.PushBudget()) == []
    with pytest.raises(PayloadError, match="arrays hold more items than its bytes"):
        jfr.decode(_nested_arrays(1000, 2), b"", params(), jfr.ingest.PushBudget())


def test_live_objects_are_the_heap_in_use() -> None:
    """PYROSCOPE_ALLOC_LIVE=true: async-profiler's profiler.LiveObject events, the sampled
    allocations still alive when the recording was dumped (dropped before: every push of
    such an agent stored no in-use heap)."""
    doc = json.loads((PUSHES / "java-2.9.2-live.json").read_text())
    body = (PUSHES / "java-2.9.2-live.bin").read_bytes()
    windows = pyroscope.decode(body, params(doc), doc["content_type"])
    expected = doc["expected"]
    found = totals(windows)
    assert found["inuse_objects"] == [expected["inuse_objects"]] * 2
    assert found["inuse_space"] == [expected["inuse_space"], expected["inuse_objects"]]
    assert {"alloc_objects", "cpu", "mutex_contentions", "block_contentions"} <= set(found)
    allocate = 0
    for w in windows:
        if w.type == "inuse_space":
            p = w.profile
            allocate += sum(
                v
                for s, v in zip(p.sample_stack, p.sample_weight, strict=True)
                if p.frames[p.stacks[s][0]].function == "App.allocate"
            )
    assert allocate == expected["inuse_space_allocate"]
