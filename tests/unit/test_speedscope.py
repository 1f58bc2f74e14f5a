"""speedscope JSON export: sampled and evented, checked by decoding them again."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.formats import folded, pprof, speedscope
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def root_first_names(p: Profile) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        out[tuple(p.frames[f].function for f in reversed(stack))] += weight
    return dict(out)


def frame_names(doc: dict) -> list[str]:
    return [f["name"].removesuffix(" [inlined]") for f in doc["shared"]["frames"]]


def decode_sampled(doc: dict) -> dict[tuple[str, ...], float]:
    names = frame_names(doc)
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for prof in doc["profiles"]:
        assert prof["type"] == "sampled"
        assert len(prof["samples"]) == len(prof["weights"])
        assert prof["endValue"] == pytest.approx(sum(prof["weights"]))
        for stack, weight in zip(prof["samples"], prof["weights"], strict=True):
            out[tuple(names[i] for i in stack)] += weight
    return dict(out)


def decode_evented(doc: dict) -> dict[tuple[str, ...], float]:
    """Stack weights back from open/close events, checking they nest properly."""
    names = frame_names(doc)
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for prof in doc["profiles"]:
        assert prof["type"] == "evented"
        stack: list[int] = []
        last = 0.0
        for event in prof["events"]:
            assert event["at"] >= last
            if event["at"] > last and stack:
                out[tuple(names[i] for i in stack)] += event["at"] - last
            last = event["at"]
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert stack.pop() == event["frame"]
        assert not stack and last == prof["endValue"]
    return {k: v for k, v in out.items() if v}


def test_sampled_round_trip(tmp_path: Path) -> None:
    p = folded.read(FIXTURES / "hot.folded")
    out = tmp_path / "hot.speedscope.json"
    speedscope.write(p, out)
    doc = json.loads(out.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert doc["profiles"][0]["unit"] == "none"
    assert decode_sampled(doc) == root_first_names(p)


def test_evented_round_trip(tmp_path: Path) -> None:
    p = folded.read(FIXTURES / "hot.folded")
    out = tmp_path / "hot.json"
    speedscope.write(p, out, kind="evented")
    assert decode_evented(json.loads(out.read_text())) == root_first_names(p)


def test_go_profile_units_and_inlined_frames(tmp_path: Path) -> None:
    p = pprof.read(FIXTURES / "go-cpu.pb.gz")
    out = tmp_path / "go.json"
    speedscope.write(p, out)
    doc = json.loads(out.read_text())
    assert doc["profiles"][0]["unit"] == "nanoseconds"
    assert doc["profiles"][0]["endValue"] == p.total
    inlined = [f for f in doc["shared"]["frames"] if f["name"].endswith(" [inlined]")]
    assert inlined and all(f["file"] and f["line"] > 0 for f in inlined)
    assert decode_sampled(doc) == root_first_names(p)


def test_one_profile_per_thread(tmp_path: Path) -> None:
    b = ProfileBuilder(unit="ns")
    b.add([Frame("work"), Frame("main")], 3.0, thread=Thread(11, 10, "worker"))
    b.add([Frame("main")], 2.0, thread=Thread(12, 10))
    b.add([Frame("idle")], 1.0)
    out = tmp_path / "t.json"
    speedscope.write(b.build(), out, name="run")
    doc = json.loads(out.read_text())
    assert [prof["name"] for prof in doc["profiles"]] == [
        "run",
        "run tid 12",
        "run worker (tid 11)",
    ]
    assert [prof["endValue"] for prof in doc["profiles"]] == [1.0, 2.0, 3.0]


def test_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown speedscope profile kind"):
        speedscope.write(Profile(), tmp_path / "x.json", kind="tree")
