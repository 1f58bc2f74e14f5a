"""A third-party SwissTable: lookups in abseil's flat_hash_map (Debian's libabsl-dev)
of 72-byte pairs, examples/cache/abseil_lookup.cc, recorded with the real tracer.

find_session(map, key) reads ctrl_, slots_ and capacity_ through `map` (size_ and
growth_left never), then 16 control bytes at the probe's start with one unaligned
SSE2 load, which crosses a cache line for 15 of its 64 starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_show import cache_doc
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "abseil_lookup"
# 65,535 slots: their 64 KiB of control bytes and 4.6 MiB of pairs outgrow the L1d
ARGS = ("50000", "20000")
GEOMETRY = "line=64,L1d=32K:8,L2=1M:8,LLC=32M:16,prefetch=none"


@pytest.fixture(scope="module")
def recorded(examples_built, tmp_path_factory) -> dict:
    store = tmp_path_factory.mktemp("abseil") / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_session",
        "--cache-model", GEOMETRY, "--sample-calls", "1", "--max-calls", "100000",
        "--", str(BINARY), *ARGS,
    )  # fmt: skip
    shown = perfsleuth(store, "cache", "show").stdout
    return {"doc": cache_doc(store), "text": " ".join(shown.split())}  # unwrapped


def test_a_load_that_crosses_a_line_boundary_counts_both_lines_of_its_source_line(recorded):
    rows = recorded["doc"]["footprint"]["by_source"]
    group = next(r for r in rows if "emmintrin.h" in r["source"])  # _mm_loadu_si128
    # one 16-byte load of control bytes a probe, 15 of its 64 starts crossing a line
    assert group["data_lines_per_call"] > 1.1 * group["accesses_per_call"]


def test_the_map_is_hot_only_in_the_members_a_lookup_reads(recorded):
    (layout,) = [lay for lay in recorded["doc"]["layouts"] if lay["variable"] == "map"]
    (ancestor,) = layout["fields"]  # flat_hash_map's members are its base classes'
    inside = {m["name"]: m["hot"] for m in ancestor["inside"]}
    assert inside == {
        "ctrl_": True, "slots_": True, "size_": False, "capacity_": True,
        "settings_.value": False,
    }  # fmt: skip
