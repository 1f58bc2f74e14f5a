"""speedscope JSON export: sampled and evented, checked by decoding them again."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.formats import folded, pprof
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.present import PROFILE, TitledProfile, speedscope, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def export(p: Profile, path: Path) -> dict:
    """What `perfsleuth export --speedscope` writes, read back."""
    write(PROFILE, TitledProfile(p, path.stem), "speedscope", str(path))
    return json.loads(path.read_text())


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
    doc = export(p, tmp_path / "hot.speedscope.json")
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert doc["profiles"][0]["unit"] == "none"
    assert decode_sampled(doc) == root_first_names(p)


def test_evented_round_trip() -> None:
    p = folded.read(FIXTURES / "hot.folded")
    assert decode_evented(speedscope.to_json(p, "evented", "hot")) == root_first_names(p)


def test_go_profile_units_and_inlined_frames(tmp_path: Path) -> None:
    p = pprof.read(FIXTURES / "go-cpu.pb.gz")
    doc = export(p, tmp_path / "go.json")
    assert doc["profiles"][0]["unit"] == "nanoseconds"
    assert doc["profiles"][0]["endValue"] == p.total
    inlined = [f for f in doc["shared"]["frames"] if f["name"].endswith(" [inlined]")]
    assert inlined and all(f["file"] and f["line"] > 0 for f in inlined)
    assert decode_sampled(doc) == root_first_names(p)


def test_one_profile_per_thread() -> None:
    b = ProfileBuilder(unit="ns")
    b.add([Frame("work"), Frame("main")], 3.0, thread=Thread(11, 10, "worker"))
    b.add([Frame("main")], 2.0, thread=Thread(12, 10))
    b.add([Frame("idle")], 1.0)
    doc = speedscope.to_json(b.build(), "sampled", "run")
    assert [prof["name"] for prof in doc["profiles"]] == [
        "run",
        "run tid 12",
        "run worker (tid 11)",
    ]
    assert [prof["endValue"] for prof in doc["profiles"]] == [1.0, 2.0, 3.0]


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown speedscope profile kind"):
        speedscope.to_json(Profile(), "tree", "x")
