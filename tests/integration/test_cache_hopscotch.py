"""A third-party hopscotch table: lookups in tsl::hopscotch_map (Debian's
libtsl-hopscotch-map-dev, header-only) of 80-byte buckets,
examples/cache/hopscotch_lookup.cc, recorded with the real tracer.

find_session(map, key) reads m_mask, m_buckets, and (to compare with end()) the bucket
vector's end and the overflow list's head through `map`; then the home bucket
`m_buckets + index * 80`, which GCC hands to the inlined find_in_buckets() as its
parameter `bucket_for_hash`: the neighbourhood bitmap at 0 and, in the pair kept at 8
in a `std::aligned_storage<72, 8>::type`, the key, last_seen and hits (bytes 8 to 28)."""

from __future__ import annotations

import pytest
from cache_show import example_layouts, hot_inside_the_map, inside_heat

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    return example_layouts("hopscotch_lookup", tmp_path_factory)


def test_a_bucket_reached_through_an_inlined_callees_parameter_is_laid_out(layouts):
    """DWARF places find_in_buckets()'s `bucket_for_hash` in rax; being a formal
    parameter it was taken for one of find_session's, whose layouts are only of its
    own parameters, and the buckets had no layout."""
    bucket = layouts["bucket_for_hash"]
    assert bucket["variable_kind"] == "local"
    assert bucket["struct"].startswith("hopscotch_bucket<")
    hot = {f["name"]: f["hot"] for f in bucket["fields"]}
    assert hot["m_neighborhood_infos"] and hot["m_value"]
    assert [line["touched"] for line in bucket["lines"]] == [1.0, 0.0]
    # bytes 0 to 28 of buckets at 16-byte steps of a line: crossing one for a bucket in four
    assert bucket["lines_touched_per_call"] == pytest.approx(1.25, abs=0.05)


def test_the_pair_a_bucket_keeps_in_aligned_storage_is_laid_out_as_the_pair(layouts):
    """`std::aligned_storage<72, 8>::type m_value` is a union of the 72 bytes and an
    empty aligned struct: it was one 72-byte field, the key, last_seen and hits not
    told from the cold fields."""
    assert inside_heat(layouts["bucket_for_hash"], "m_value") == {
        "first": (8, True), "second.last_seen": (16, True), "second.hits": (24, True),
        "second.flags": (28, False), "second.bytes_in": (32, False),
        "second.bytes_out": (40, False), "second.peer": (48, False),
    }  # fmt: skip


def test_the_map_is_hot_only_in_the_members_a_lookup_reads(layouts):
    hot = hot_inside_the_map(layouts)  # hopscotch_map's one member, m_ht
    assert hot == [
        "m_buckets", "m_buckets_data._M_impl._M_finish", "m_mask",
        "m_overflow_elements._M_impl._M_node._M_next",
    ]  # fmt: skip
