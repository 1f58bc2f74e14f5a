"""Missing symbols and broken stacks on hand-built profiles."""

from __future__ import annotations

from perfsleuth.analyzers import Context, missing_symbols
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.model.run import RunInfo

START = Frame("_start", "app")
MAIN = Frame("main", "app", "/src/app.c", 3)
UNKNOWN = Frame("[unknown]", "libfoo.so.1")


def analyze(samples: list[tuple[list[Frame], float]]) -> dict:
    builder = ProfileBuilder()
    for frames, weight in samples:
        builder.add(frames, weight)
    ctx = Context(profile=builder.build(), run=RunInfo(meta={"call_graph": "fp"}))
    return {f.rule: f for f in missing_symbols.analyze(ctx)}


def test_unknown_functions_are_reported_per_dso() -> None:
    found = analyze([([UNKNOWN, MAIN, START], 40), ([MAIN, START], 60)])
    missing = found["symbols.missing"]
    assert missing.share == 0.4 and missing.confidence >= 0.9
    assert missing.dso == "libfoo.so.1"
    assert "libfoo.so.1: 40.0%" in missing.evidence[0]
    assert "-g" in missing.suggestion


def test_broken_stacks_suggest_dwarf_unwinding_after_fp() -> None:
    found = analyze([([Frame("helper", "app")], 50), ([MAIN, START], 50)])
    broken = found["symbols.broken-stacks"]
    assert broken.share == 0.5
    assert "--call-graph dwarf" in broken.suggestion


def test_a_well_symbolized_profile_has_no_finding() -> None:
    assert analyze([([MAIN, START], 100)]) == {}


def test_callgrind_stacks_are_never_called_broken():
    b = ProfileBuilder(unit="instructions", meta={"format": "callgrind"})
    b.add([Frame("work", "/bin/prog"), Frame("0x0000000000001080", "/bin/prog")], 100)
    ctx = Context(profile=b.build(), run=RunInfo(mode="count"))
    assert not [f for f in missing_symbols.analyze(ctx) if "stop before" in f.title]
