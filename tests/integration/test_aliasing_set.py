"""Precision and recall of the combined aliasing analyzers (libclang patterns checked
against clang-16's remarks) on the labelled set in tests/aliasing_set/."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from perfsleuth.commands.lint import lint

SET = Path(__file__).resolve().parents[1] / "aliasing_set"

pytestmark = pytest.mark.integration


def labels() -> dict[tuple[str, str], bool]:
    manifest = tomllib.loads((SET / "manifest.toml").read_text())
    return {
        (file, function): label == "positive"
        for file, table in manifest.items()
        for label in ("positive", "negative")
        for function in table[label]
    }


@pytest.fixture(scope="module")
def flagged() -> set[tuple[str, str]]:
    findings, notes = lint([], SET / "compile_commands.json")
    assert notes == []
    return {(Path(f.file).name, f.function) for f in findings if f.kind == "aliasing-write"}


def test_the_set_is_big_enough() -> None:
    truth = labels()
    assert sum(truth.values()) >= 15
    assert sum(not v for v in truth.values()) >= 15


def test_precision_and_recall_are_at_least_0_8(flagged: set[tuple[str, str]]) -> None:
    truth = labels()
    true_pos = sum(1 for key, positive in truth.items() if positive and key in flagged)
    false_pos = sum(1 for key, positive in truth.items() if not positive and key in flagged)
    positives = sum(truth.values())
    precision = true_pos / max(1, true_pos + false_pos)
    recall = true_pos / positives
    print(f"\naliasing set: {true_pos}/{positives} positives found, {false_pos} false positives,")
    print(f"precision {precision:.2f}, recall {recall:.2f}")
    assert precision >= 0.8, f"precision {precision:.2f}"
    assert recall >= 0.8, f"recall {recall:.2f}"


def test_every_flagged_function_is_labelled(flagged: set[tuple[str, str]]) -> None:
    assert flagged <= set(labels())
