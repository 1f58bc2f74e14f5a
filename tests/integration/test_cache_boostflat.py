"""A third-party SIMD-group table: lookups in Boost 1.81's unordered_flat_map
(libboost1.81-dev, header-only) of 72-byte pairs, examples/cache/boostflat_lookup.cc,
recorded with the real tracer.

find_session(map, key) reads arrays.groups_size_index, arrays.groups and
arrays.elements through `map` (inside its member `table_`); then the probed group's 16
metadata bytes, and the pair at `elements + (pos * 15 + n) * 72`, which GCC computes
as `rbx = elements + pos * 1080` and `lea r8, [rbx + r8*8]` of n * 9: its key, and of
the value last_seen and hits (bytes 0 to 20). The example is built only where the
header is (libboost1.81-dev conflicts with Debian's default libboost-dev); clang-16's
build reads the groups inside a probe loop of 39 instructions."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_show import lookup_layouts

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "boostflat_lookup"


def recorded_layouts(binary: Path, store: Path) -> dict:
    if not binary.exists():
        pytest.skip(f"examples/bin/{binary.name} is built only with libboost1.81-dev")
    return lookup_layouts(store, binary)


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    return recorded_layouts(BINARY, tmp_path_factory.mktemp("boostflat") / "store")


@pytest.fixture(scope="module")
def clang_layouts(examples_built, tmp_path_factory) -> dict:
    clang = BINARY.with_name("boostflat_lookup-clang")
    return recorded_layouts(clang, tmp_path_factory.mktemp("boostflat-clang") / "store")


def test_the_pairs_reached_by_a_scaled_index_are_laid_out(layouts):
    """They had no layout: an index scaled by `lea` (scale 8) onto the group's first
    element was not taken for an element of the array that pointer points to."""
    (pairs,) = [lay for lay in layouts.values() if lay["struct"].startswith("pair<")]
    hot = {f["name"]: f["hot"] for f in pairs["fields"]}
    assert hot["first"] and hot["second"]
    (value,) = [f for f in pairs["fields"] if f["name"] == "second"]
    inside = {m["name"]: m["hot"] for m in value["inside"]}
    assert inside == {
        "last_seen": True, "hits": True, "flags": False, "bytes_in": False,
        "bytes_out": False, "peer": False,
    }  # fmt: skip
    assert [line["touched"] for line in pairs["lines"]] == [1.0, 0.0]
    # bytes 0 to 20 of pairs at 72-byte steps: crossing a line for two starts in eight
    assert pairs["lines_touched_per_call"] == pytest.approx(1.25, abs=0.05)


def test_the_map_is_hot_only_in_the_members_a_lookup_reads(layouts):
    (field,) = layouts["map"]["fields"]  # unordered_flat_map's one member, table_
    hot = sorted(m["name"] for m in field["inside"] if m["hot"])
    # groups_size_mask is read only past a group that overflowed: rarely, not hot
    assert hot == ["arrays.elements", "arrays.groups", "arrays.groups_size_index"]


def test_the_group_metadata_is_read_whole(layouts):
    (metadata,) = layouts["pg"]["fields"]
    assert (metadata["name"], metadata["hot"]) == ("m", True)


def test_clangs_groups_read_inside_a_long_probe_loop_are_laid_out(clang_layouts):
    """clang-16 loads the groups' pointer once, before a probe loop of 39
    instructions that reads the group at `[rcx + rbx]`: the search back for that
    load gave up at 32 instructions and the groups had no layout."""
    (metadata,) = clang_layouts["map->table_.arrays.groups[]"]["fields"]
    assert (metadata["name"], metadata["hot"]) == ("m", True)
    (field,) = clang_layouts["map"]["fields"]
    hot = sorted(m["name"] for m in field["inside"] if m["hot"])
    # clang reads the mask before the loop, wherever the probe ends
    assert hot == [
        "arrays.elements", "arrays.groups", "arrays.groups_size_index", "arrays.groups_size_mask",
    ]  # fmt: skip
