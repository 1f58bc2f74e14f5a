"""A third-party hash map whose lookup hands the map to a callee: stb_ds (Debian's
libstb-dev), examples/cache/stbds_lookup.c, recorded with the real tracer.

find_item(map, key) passes `map` to stbds_hmget_key_ts, whose accesses agree on
the map's hash index header (displacements 8 to 104, past the 72-byte item): that
header was laid out as `*map`, an item with `value` hot in every call and `key`
cold. The item a lookup finds (`found`, a local) has key, hits and last_seen on
the struct's line 0, and the 72-byte items start at every eighth byte of a line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, pahole_members, record_cache
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "stbds_lookup"


@pytest.fixture(scope="module")
def store(examples_built, tmp_path_factory) -> Path:
    return record_cache(tmp_path_factory.mktemp("stbds"), BINARY, "find_item", "2000", "8000")


def test_the_map_handed_to_a_callee_gets_no_layout_of_the_items_struct(store):
    layouts = {layout["variable"]: layout for layout in cache_doc(store)["layouts"]}
    assert "map" not in layouts
    found = layouts["found"]
    assert (found["variable_kind"], found["struct"], found["size"]) == ("local", "item", 72)
    assert [f["name"] for f in found["fields"] if f["hot"]] == ["key", "value"]
    assert [(f["name"], f["offset"], f["size"]) for f in found["fields"]] == [
        (name, offset, size) for name, offset, _bit, size in pahole_members(BINARY, "item")
    ]
    # bytes 0-16 and 56-64 of items that start at every eighth byte of a line
    assert 1.6 < found["lines_touched_per_call"] < 2.0
    assert [line["touched"] for line in found["lines"]] == [1.0, 0.0]


def test_cache_show_prints_the_typedef_and_why_the_items_touch_two_lines(store):
    shown = perfsleuth(store, "cache", "show").stdout
    assert "typedef struct {" in shown and "} item;" in shown
    assert "the bytes touched lie in 1.00 of the struct's lines" in shown


def test_the_sweep_reports_the_slots_a_lookup_compares(examples_built):
    """stb_ds's index doubles when 3/4 full (at 3,072 items for 4,096 slots): the slots
    a lookup compares fall there, as its latency does (no timing asserted)."""
    out = subprocess.run(
        [BINARY, "--sweep", "3000,3300"], capture_output=True, text=True, check=True
    ).stdout
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    work = {int(n): float(slots) for n, _latency, slots in rows}
    assert work[3000] > 2.0  # just before the doubling
    assert 1.0 < work[3300] < 1.5  # just after it
