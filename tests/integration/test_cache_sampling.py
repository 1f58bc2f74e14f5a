"""Sampled calls under the real fntrace tool: 1 in k calls over the whole run gives
the layout finding the first calls give, and the document, `cache show` and the
finding say which calls were traced; the time budget stops a long run (the
options' bounds: tests/unit/test_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cache_show import cache_doc
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration


def record(store: Path, binary: Path, *options: str, args: tuple[str, ...]) -> dict:
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "handle_packet", *options,
        "--", str(binary), *args,
    )  # fmt: skip
    return cache_doc(store)


def layout_finding(store: Path) -> dict:
    findings = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)["findings"]
    [layout] = [f for f in findings if f["kind"] == "cache-layout"]
    return layout


def test_sampled_calls_give_the_layout_finding_of_the_first_calls(examples_built, tmp_path):
    binary, args = examples_built / "conntable", ("2000", "20000")
    first = tmp_path / "first"
    sampled = tmp_path / "sampled"
    record(first, binary, "--max-calls", "50", "--sample-calls", "1", args=args)
    doc = record(sampled, binary, "--max-calls", "50", args=args)  # auto is the default
    # every call until 100 are in, then k doubles: 20000 calls -> k = 256, 79 calls
    assert doc["sampling"] == {"chosen": "auto", "every": 256, "calls_seen": 20000,
                               "calls_traced": 79, "budget_s": 300.0,
                               "out_of_time": False}  # fmt: skip
    assert doc["footprint"]["calls_recorded"] == 79
    before, after = layout_finding(first), layout_finding(sampled)
    assert after["details"]["struct"] == before["details"]["struct"] == "conn"
    assert after["details"]["reorder"] == before["details"]["reorder"]
    assert after["details"]["field"] == "last_ack"
    assert "1 in 256 calls traced (79 of 20,000, over the whole run)" in after["evidence"]
    assert before["details"]["sampling"]["chosen"] == "first"
    shown = perfsleuth(sampled, "cache", "show").stdout
    assert "1 in 256 calls traced (79 of 20,000, over the whole run)" in shown


def test_a_fixed_interval_stops_once_the_calls_are_in(examples_built, tmp_path):
    doc = record(tmp_path, examples_built / "conntable", "--max-calls", "20",
                 "--sample-calls", "7", args=("500", "3000"))  # fmt: skip
    sampling = doc["sampling"]
    assert (sampling["chosen"], sampling["every"], sampling["calls_traced"]) == ("fixed", 7, 20)
    assert sampling["calls_seen"] == 19 * 7 + 1  # stopped at the 20th sampled call


def test_the_time_budget_stops_a_long_run(examples_built, tmp_path):
    doc = record(tmp_path, examples_built / "conntable", "--max-calls", "20",
                 "--trace-seconds", "2", args=("500", "2000000000"))  # fmt: skip
    sampling = doc["sampling"]
    assert sampling["out_of_time"] and sampling["budget_s"] == 2.0
    assert 20 <= sampling["calls_traced"] <= 41
    assert sampling["calls_seen"] >= 40 * (sampling["every"] // 2)
