"""A third-party Robin Hood table: lookups in tsl::robin_map (Debian's robin-map-dev,
header-only) of 80-byte buckets, examples/cache/robinmap_lookup.cc, recorded with the
real tracer.

find_session(map, key) reads m_mask, m_buckets and m_bucket_count through `map`, all
three inside its member `m_ht` (the robin_hash the map wraps); then the bucket
`m_buckets + index * 80`: its distance from the ideal bucket at 0 and, in the pair
stored at 8, the key, last_seen and hits (bytes 8 to 28). The bucket array's pointer
is a member of a member: `map->m_ht.m_buckets`."""

from __future__ import annotations

import pytest
from cache_show import example_layouts, hot_inside_the_map, inside_heat

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    return example_layouts("robinmap_lookup", tmp_path_factory)


def test_the_bucket_array_a_member_of_a_member_points_to_is_laid_out(layouts):
    """It had no layout: the member pointer was sought among the map's own members,
    and `m_ht` (at 0, 80 bytes) holds it at 0x20."""
    buckets = layouts["map->m_ht.m_buckets[]"]
    assert buckets["struct"].startswith("bucket_entry<")
    hot = {f["name"]: f["hot"] for f in buckets["fields"]}
    assert hot["m_dist_from_ideal_bucket"] and hot["m_value"]
    assert not hot["m_last_bucket"]  # read only by iteration, not by find()
    # an empty base class (no StoreHash: no truncated hash) holds no byte to touch; it
    # was hot, overlapping the distance at 0
    assert not hot["<ancestor bucket_entry_hash<false>>"]
    assert [line["touched"] for line in buckets["lines"]] == [1.0, 0.0]
    # bytes 0 to 28 of buckets at 16-byte steps of a line: crossing one for a bucket in four
    assert buckets["lines_touched_per_call"] == pytest.approx(1.25, abs=0.05)


def test_the_pair_a_bucket_keeps_in_raw_bytes_is_laid_out_as_the_pair(layouts):
    """bucket_entry keeps its value in `unsigned char m_value[sizeof(value_type)]`: it
    was one 72-byte field, the key, last_seen and hits not told from the cold fields."""
    assert inside_heat(layouts["map->m_ht.m_buckets[]"], "m_value") == {
        "first": (8, True), "second.last_seen": (16, True), "second.hits": (24, True),
        "second.flags": (28, False), "second.peer": (32, False),
        "second.bytes_in": (64, False), "second.bytes_out": (72, False),
    }  # fmt: skip


def test_the_map_is_hot_only_in_the_members_a_lookup_reads(layouts):
    hot = hot_inside_the_map(layouts)  # robin_map's one member, m_ht
    assert hot == ["m_bucket_count", "m_buckets", "m_mask"]
