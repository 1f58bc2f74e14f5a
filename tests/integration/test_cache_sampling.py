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


UTHASH_MODEL = "line=64,L1d=32K:8,L2=1M:8,LLC=32M:16"  # pinned: the same levels on any machine


def uthash_misses(store: Path, binary: Path, *options: str) -> tuple[dict, dict]:
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_entry",
        "--cache-model", UTHASH_MODEL, *options, "--", str(binary), "20000", "40000",
    )  # fmt: skip
    doc = cache_doc(store)
    return doc["sampling"], doc["model"]["misses_per_call"]


def test_the_sampled_model_is_within_a_fifth_of_every_call_traced(examples_built, tmp_path):
    """uthash lookups over 20,000 entries (40,000 lines, the L2 holds 16,384):
    1 call in 256 traced, the L2 and LLC misses from the spatial sample of every
    call (cpu_cache_projections/spatial_sample.py), against all 40,000 calls
    traced. The traced calls alone gave the L2 -28% and the LLC -35%."""
    binary = examples_built / "uthash_lookup"
    every_call, exact = uthash_misses(
        tmp_path / "exact", binary, "--sample-calls", "1", "--max-calls", "40000"
    )
    sampling, sampled = uthash_misses(tmp_path / "sampled", binary, "--max-calls", "100")
    assert every_call["calls_traced"] == 40000
    assert (sampling["every"], sampling["calls_traced"]) == (256, 157)
    assert exact["L2"] > 1.0 > exact["LLC"] > 0.2  # capacity misses in the L2, first touches below
    for level in ("L1d", "L2", "LLC"):
        assert sampled[level] == pytest.approx(exact[level], rel=0.2), level
