"""A second third-party table: string keys in a GLib GHashTable (Debian's
libglib2.0-dev), examples/cache/ghash_lookup.c, the keys in the caller's array as
an interpreter holds them; find_value() recorded with the real tracer over
`--scale`. Its lookups read the table's hashes[], keys[] and values[] arrays and
the key string: the fit counts them all (docs/cache.md, the sampling round)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_show import cache_doc
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

BINARY = Path(__file__).resolve().parents[2] / "examples" / "bin" / "ghash_lookup"


def test_the_scaled_working_set_counts_the_tables_arrays_and_the_keys(examples_built, tmp_path):
    store = tmp_path / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_value",
        "--scale", "n=500,1000,2000", "--", str(BINARY), "{n}",
    )  # fmt: skip
    scaling = cache_doc(store)["scaling"]
    # per key: 4 + 8 + 8 bytes of arrays 2 to 4 slots a key, and the key's string:
    # more than a line, where the key string alone would be half of one
    assert 1.0 < scaling["fit"]["touched_lines_per_n"] < 2.0
    assert [run["calls"] for run in scaling["runs"]] == [2000, 4000, 8000]
    l2 = scaling["cliffs"][1]
    assert l2["level"] == "L2" and l2["n"] > 2000 and not l2["below_range"]


def test_library_code_a_call_runs_is_named_by_library_and_function(examples_built, tmp_path):
    """find_value's lookups run GLib's and libc's code: its rows name them (they were
    bare addresses such as 0x4893927)."""
    store = tmp_path / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "find_value",
        "--max-calls", "50", "--sample-calls", "1", "--", str(BINARY), "2000",
    )  # fmt: skip
    sources = [row["source"] for row in cache_doc(store)["footprint"]["by_source"]]
    glib = [s for s in sources if s.startswith("libglib-2.0.so.0")]
    assert {"g_hash_table_lookup", "g_str_equal"} <= {s.split()[1] for s in glib}, sources
    assert "ghash_lookup [PLT stub]" in sources  # not "_init"
    assert any(s.startswith("libc.so.6 __strcmp") for s in sources), sources
    assert not [s for s in sources if s.startswith("0x") or " _init" in s], sources
