"""A third-party hash table: lookups in uthash (Debian's uthash-dev) of 112-byte
entries, examples/cache/uthash_lookup.c, recorded with the real tracer.

find_entry(table, key) reads `table->hh.tbl` (offset 56, line 0 of the head entry)
through its parameter, then walks a bucket's chain through uthash's handles, whose
hh_next, key, keylen and hashv sit on each entry's second line. Scaled over
n = 500..2,000 entries, its L1d is already outgrown at the smallest n."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, record_cache
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "uthash_lookup"


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    store = record_cache(tmp_path_factory.mktemp("uthash"), BINARY, "find_entry", "4000")
    return {layout["variable"]: layout for layout in cache_doc(store)["layouts"]}


def hot(layout: dict) -> list[str]:
    return [f["name"] for f in layout["fields"] if f["hot"]]


def test_the_head_parameter_is_hot_only_where_it_is_read(layouts):
    table = layouts["table"]
    assert table["variable_kind"] == "parameter"
    assert hot(table) == ["hh"]  # hh.tbl, the only access through `table`
    line0, line1 = table["lines"]
    assert line0["hot_fields"] == ["hh"] and line0["touched"] == 1.0
    assert line1["hot_fields"] == [] and line1["touched"] == 0.0


def test_a_line_holding_hot_bytes_of_a_field_that_starts_before_it_is_hot(layouts):
    found = layouts["found"]
    line1 = found["lines"][1]
    assert line1["touched"] > 0.9  # the chain's hh_next, hashv, keylen: every visit
    assert line1["hot_fields"] == ["hh"] and line1["hot_bytes"] == 48


@pytest.fixture(scope="module")
def scaling(examples_built, tmp_path_factory) -> dict:
    store = tmp_path_factory.mktemp("uthash-scale") / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_entry",
        "--scale", "n=500,1000,2000", "--", str(BINARY), "{n}",
    )  # fmt: skip
    shown = perfsleuth(store, "cache", "show")
    return {"doc": cache_doc(store)["scaling"], "text": shown.stdout}


def test_an_l1d_outgrown_at_the_smallest_n_has_its_cliff_below_the_range(scaling):
    # about 1.5 lines per entry touched: the L1d's 512 lines are full before n = 500
    l1d = scaling["doc"]["cliffs"][0]
    assert l1d["level"] == "L1d" and l1d["below_range"] and not l1d["in_range"]
    assert l1d["n"] is not None and 0 < l1d["n"] < 500
    assert "L1d" in scaling["text"] and "below the measured range" in scaling["text"]


def test_the_misses_beside_the_llc_cliff_come_from_the_llc_it_uses(scaling):
    doc = scaling["doc"]
    llc, simulated = doc["cliffs"][-1], doc["geometry"]["levels"][-1]
    ways_of_lines = simulated["ways"]
    assert abs(simulated["size"] // 64 - llc["capacity_lines"]) < ways_of_lines
    assert f"LLC {simulated['size'] // 1024:,}K" in scaling["text"]


def test_the_sweep_reports_the_chain_entries_a_lookup_passes(examples_built):
    """The work per lookup the cliff bench fits beside the misses: it grows with n
    while the buckets stay (62 and 134 entries in 32 buckets) and falls when uthash
    doubles them (146 entries in 64); no timing is asserted."""
    out = subprocess.run(
        [BINARY, "--sweep", "62,134,146"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    steps = {int(row[0]): float(row[2]) for row in rows}
    assert steps[62] == pytest.approx(2.1935, abs=1e-4)
    assert steps[134] > steps[62] and steps[146] < steps[134]
    assert all(steps[n] >= 1 for n in steps)


def test_a_size_with_fewer_lookups_than_entries_is_warned_of(examples_built, tmp_path):
    """1,000 lookups at n = 500 and 2,000: at 2,000 they reach at most half the
    entries, and the record, `cache show` and the cliff's finding say so."""
    store = tmp_path / "store"
    recorded = perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_entry",
        "--scale", "n=500,2000", "--", str(BINARY), "{n}", "1000",
    )  # fmt: skip
    warning = "fewer calls traced than n at n = 2,000 (1,000 calls)"
    assert warning in recorded.stderr and "n = 500" not in recorded.stderr.split(warning)[1]
    assert f"warning: {warning}" in perfsleuth(store, "cache", "show").stdout
    runs = cache_doc(store)["scaling"]["runs"]
    assert [(run["n"], run["calls"]) for run in runs] == [(500, 1000), (2000, 1000)]
