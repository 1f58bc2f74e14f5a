"""A third-party table CI can install that keeps its pairs apart from its buckets:
lookups in tsl::ordered_map (Debian's libtsl-ordered-map-dev, header-only) with its
72-byte pairs in a std::vector, examples/cache/ordered_lookup.cc, recorded with the real
tracer; the vector-member path of ankerl::unordered_dense (test_cache_dense.py, which
skips where that header is missing) on a table from Debian.

find_session(map, key) reads the buckets' pointer, the mask and the values' data pointer
through `map` (inside its one member, m_ht); then the home bucket's 8-byte bucket_entry,
and the pair its index names, `map->m_ht.m_values._M_impl._M_start + index * 72`: the
vector's data pointer five members and base classes down the map (m_ht, m_values,
_Vector_base, _M_impl, _Vector_impl_data): its key, and of the value last_seen and hits
(bytes 0 to 20)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cache_show import LOOKUPS_PAIR, a_lookups_pair, example_layouts, hot_inside_the_map

pytestmark = pytest.mark.integration

PAIRS = "map->m_ht.m_values._M_impl._M_start[]"
BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "ordered_lookup"
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    return example_layouts("ordered_lookup", tmp_path_factory)


def test_the_pairs_a_bucket_indexes_in_a_vector_inside_a_member_are_laid_out(layouts):
    pairs = layouts[PAIRS]
    assert pairs["variable_kind"] == "member"
    *heat, lines = a_lookups_pair(pairs)
    assert tuple(heat) == LOOKUPS_PAIR
    assert lines == pytest.approx(1.25, abs=0.05)


def test_the_map_is_hot_only_in_the_members_a_lookup_reads(layouts):
    """GCC's find_session() reads the mask and the buckets' pointer first; then, for a
    bucket whose truncated hash matches, the values' data pointer, the buckets vector's
    begin and end (the bucket's iterator against its end) and the values' end (the
    pair's iterator against end()): the map's other members (the load threshold, the
    maximum load factor, the grow flag, both vectors' capacity) are cold."""
    assert hot_inside_the_map(layouts) == [
        "m_buckets", "m_buckets_data._M_impl._M_finish", "m_buckets_data._M_impl._M_start",
        "m_hash_mask", "m_values._M_impl._M_finish", "m_values._M_impl._M_start",
    ]  # fmt: skip


def test_the_tlb_sweep_times_one_map_on_2_mib_pages_and_its_twin_on_4_kib_pages(examples_built):
    """bench/cache_cliff.py's TLB knee of the C++ maps: `--tlb-sweep` builds the map twice
    in one process (map_harness.hh, page_sizes.hh), one in an arena madvised for
    transparent huge pages, one forbidden them, and times them in turns; the difference
    is the page walks. What is asserted is that each map sat on the pages its arena
    says (smaps, read by the program), the same memory resident but for the 2 MiB
    arena's last page, resident whole; no timing."""
    if not THP.exists() or "[never]" in THP.read_text():
        pytest.skip("transparent huge pages are off here: no 2 MiB arena to compare with")
    out = subprocess.run(
        [BINARY, "--tlb-sweep", "60000,20000"], check=True, capture_output=True, text=True,
        timeout=120,
    ).stdout  # fmt: skip
    rows = {int(row[0]): row[1:] for row in map(str.split, out.splitlines()) if row[0] != "#"}
    assert sorted(rows) == [20000, 60000]
    for ns_huge, ns_small, _, kb_huge, huge_kb, kb_small, small_huge_kb in rows.values():
        assert float(ns_huge) > 0 and float(ns_small) > 0
        assert int(small_huge_kb) == 0
        assert int(huge_kb) >= int(kb_huge) // 2  # a fragmented memory may deny a few
        assert int(kb_huge) - 2048 <= int(kb_small) <= int(kb_huge)  # the last 2 MiB page whole
