"""A table's pairs in a std::vector member, laid out from the lookups' accesses with the
real tracer: tests/fixtures/dense_vector's table of our own, shaped as
ankerl::unordered_dense (test_cache_dense.py, which runs only where that header is).

The pairs are reached through the vector's data pointer, four members and base classes
down the map (m_values, _Vector_base, _M_impl, _Vector_impl_data): with three levels
searched, they had no layout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cache_show import inside_heat, lookup_layouts

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "dense_vector" / "dense_vector_lookup.cc"
PAIRS = "map->m_values._M_impl._M_start[]"


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("dense_vector")
    binary = work / "dense_vector_lookup"
    compile_ = ["g++", "-std=c++17", "-O2", "-g", "-I", str(ROOT / "examples" / "cache")]
    subprocess.run([*compile_, "-o", str(binary), str(SOURCE)], check=True)
    return lookup_layouts(work / "store", binary)


def test_the_pairs_a_bucket_indexes_in_a_vector_member_are_laid_out(layouts):
    pairs = layouts[PAIRS]
    assert pairs["variable_kind"] == "member"
    heat = inside_heat(pairs, "second")
    assert heat["last_seen"] == (8, True) and heat["hits"] == (16, True)
    cold = [name for name in heat if name not in ("last_seen", "hits")]
    assert cold and not any(heat[name][1] for name in cold)
    hot = {f["name"]: f["hot"] for f in pairs["fields"]}
    assert hot["first"]


def test_the_map_is_hot_only_where_a_lookup_reads_it(layouts):
    hot = sorted(f["name"] for f in layouts["map"]["fields"] if f["hot"])
    assert hot == ["m_bucket_mask", "m_buckets", "m_shifts", "m_values"]
