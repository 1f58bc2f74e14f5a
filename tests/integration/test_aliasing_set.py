"""Precision and recall of the combined aliasing analyzers (libclang patterns checked
against clang-16's remarks) on the labelled set in tests/aliasing_set/: over the whole
set, and for each look-alike class of the manifest (`class` of a file's table)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfsleuth.commands.lint import lint

SET = Path(__file__).resolve().parents[1] / "aliasing_set"
TARGET = 0.95
ORIGINAL = "original"

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Label:
    positive: bool
    group: str


def labels() -> dict[tuple[str, str], Label]:
    manifest = tomllib.loads((SET / "manifest.toml").read_text())
    return {
        (file, function): Label(label == "positive", table.get("class", ORIGINAL))
        for file, table in manifest.items()
        for label in ("positive", "negative")
        for function in table[label]
    }


@pytest.fixture(scope="module")
def flagged() -> set[tuple[str, str]]:
    findings, notes = lint([], SET / "compile_commands.json")
    assert notes == []
    return {(Path(f.file).name, f.function) for f in findings if f.kind == "aliasing-write"}


def score(
    truth: dict[tuple[str, str], Label], flagged: set[tuple[str, str]]
) -> tuple[float, float]:
    """(precision, recall) of the flagged functions against the labels given."""
    true_pos = sum(1 for key, label in truth.items() if label.positive and key in flagged)
    false_pos = sum(1 for key, label in truth.items() if not label.positive and key in flagged)
    positives = sum(1 for label in truth.values() if label.positive)
    print(
        f"  {true_pos}/{positives} positives found, {false_pos} false positives "
        f"of {len(truth) - positives} look-alikes"
    )
    return true_pos / max(1, true_pos + false_pos), true_pos / max(1, positives)


def test_the_set_is_big_enough() -> None:
    truth = labels()
    assert sum(label.positive for label in truth.values()) >= 15
    assert sum(not label.positive for label in truth.values()) >= 15
    assert len({label.group for label in truth.values()}) >= 4


def test_precision_and_recall_over_the_set(flagged: set[tuple[str, str]]) -> None:
    print("\naliasing set, all classes:")
    precision, recall = score(labels(), flagged)
    print(f"  precision {precision:.2f}, recall {recall:.2f}")
    assert precision >= TARGET, f"precision {precision:.2f}"
    assert recall >= TARGET, f"recall {recall:.2f}"


def test_precision_and_recall_per_look_alike_class(flagged: set[tuple[str, str]]) -> None:
    truth = labels()
    scores = {}
    for group in sorted({label.group for label in truth.values()}):
        print(f"\naliasing set, class {group!r}:")
        part = {key: label for key, label in truth.items() if label.group == group}
        scores[group] = score(part, flagged)
        print(f"  precision {scores[group][0]:.2f}, recall {scores[group][1]:.2f}")
    low = {group: s for group, s in scores.items() if min(s) < TARGET}
    assert not low, f"below {TARGET}: {low}"


def test_every_flagged_function_is_labelled(flagged: set[tuple[str, str]]) -> None:
    assert flagged <= set(labels())


def test_loops_kept_scalar_for_another_reason_are_reported_as_that_reason() -> None:
    findings, _ = lint([SET / "blockers.c"], SET / "compile_commands.json", missed=True)
    missed = {f.function: f for f in findings if f.kind == "missed-vectorization"}
    look_alikes = [
        function
        for (file, function), label in labels().items()
        if file == "blockers.c" and not label.positive
    ]
    for function in look_alikes:
        reason = missed[function].evidence[0]
        assert reason.startswith("source: the loop at line "), reason
        assert "cannot be vectorised whatever the types" in reason


def test_cxx17_units_get_the_same_verdicts_as_cxx20(
    tmp_path: Path, flagged: set[tuple[str, str]]
) -> None:
    """Before C++20 the standard containers' members are not constexpr, so the unit's
    parse (no implicit instantiations at its end) has no body for `v.size()`: their
    class template's is read instead, and a loop over a vector is still seen through
    (Monero's C++17 `bulletproof_PROVE` was reported blocked by a call)."""
    entries = json.loads((SET / "compile_commands.json").read_text())
    cxx17 = []
    for entry in entries:
        if entry["file"] in ("members.cc", "by_value.cc"):
            arguments = ["-std=c++17" if a == "-std=c++20" else a for a in entry["arguments"]]
            cxx17.append({**entry, "directory": str(SET), "arguments": arguments})
    database = tmp_path / "compile_commands.json"
    database.write_text(json.dumps(cxx17))
    findings, notes = lint([], database)
    assert notes == []
    found = {(Path(f.file).name, f.function) for f in findings if f.kind == "aliasing-write"}
    expected = {key for key in flagged if key[0] in ("members.cc", "by_value.cc")}
    assert len(expected) >= 5
    assert found == expected
