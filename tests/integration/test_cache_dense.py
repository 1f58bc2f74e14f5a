"""A third-party table that keeps its pairs apart from its buckets: lookups in
ankerl::unordered_dense::map (martinus/unordered_dense 4.9.2, one MIT-licensed header in
no Debian package) of 72-byte pairs, examples/cache/dense_lookup.cc, recorded with the
real tracer.

find_session(map, key) reads the values' and the buckets' pointers and m_shifts through
`map` (m_bucket_mask only when the first bucket probed is not the key's); then the home
bucket's 8 bytes (the local `bucket`), and the pair its index names in the dense
std::vector m_values, `map->m_values._M_impl._M_start + index * 72`, the vector's data
pointer four members and base classes down the map: its key, and of the value
last_seen and hits (bytes 0 to 20). The example is built only where the header is
(examples/Makefile's UNORDERED_DENSE, bench/out/vendor by default)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cache_show import LOOKUPS_PAIR, a_lookups_pair, lookup_layouts

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "dense_lookup"
PAIRS = "map->m_values._M_impl._M_start[]"


@pytest.fixture(scope="module")
def layouts(examples_built, tmp_path_factory) -> dict:
    if not BINARY.exists():
        pytest.skip("examples/bin/dense_lookup is built only where ankerl/unordered_dense.h is")
    return lookup_layouts(tmp_path_factory.mktemp("dense") / "store", BINARY)


def test_the_pairs_a_bucket_indexes_in_a_vector_member_are_laid_out(layouts):
    """The vector's data pointer sits four levels down the map (m_values, its
    _Vector_base, _M_impl, _Vector_impl_data) where three were searched, and the
    alignment nop after the jump into the probe loop was taken for a path back to the
    entry: the pairs had no layout."""
    pairs = layouts[PAIRS]
    assert pairs["variable_kind"] == "member"
    *heat, lines = a_lookups_pair(pairs)
    assert tuple(heat) == LOOKUPS_PAIR
    assert lines == pytest.approx(1.25, abs=0.05)
    hot = {f["name"]: f["hot"] for f in pairs["fields"]}
    assert not any(hot[name] for name in hot if "ancestor" in name)


def test_the_buckets_and_the_map_are_hot_only_where_a_lookup_reads_them(layouts):
    bucket = {f["name"]: f["hot"] for f in layouts["bucket"]["fields"]}
    assert bucket == {"m_dist_and_fingerprint": True, "m_value_idx": True}
    hot = sorted(f["name"] for f in layouts["map"]["fields"] if f["hot"])
    assert hot == ["m_bucket_mask", "m_buckets", "m_shifts", "m_values"]


def test_the_sweep_reports_the_buckets_a_lookup_reads(layouts):
    """The work per lookup the cliff bench fits beside the misses (its L1d knee came
    out +36% without it: the keys leave 1,024 buckets without a collision up to about
    620 entries, and the latency's rise from the extra probes past it was taken for the
    L1d's), computed from the keys' home buckets, against the buckets the traced
    lookups of 20,000 entries visit; it drops where the buckets double (past 409.6
    entries). No timing is asserted."""
    out = subprocess.run(
        [BINARY, "--sweep", "401,437,20000"], check=True, capture_output=True, text=True,
        timeout=60,
    ).stdout  # fmt: skip
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    probes = {int(row[0]): float(row[2]) for row in rows}
    traced = layouts["bucket"]["visits"] / layouts["bucket"]["calls"]
    assert probes[20000] == pytest.approx(traced, rel=0.05)
    assert probes[437] < probes[401]
