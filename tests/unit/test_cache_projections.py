"""Footprint, scaling, constant-time and layout projections on small hand-made traces."""

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from perfsleuth.cpu_cache_projections import footprint, layout, scaling
from perfsleuth.cpu_cache_projections import secret_variants as constant_time
from perfsleuth.cpu_cache_projections.globals import Visit
from perfsleuth.cpu_cache_projections.model import parse_spec
from perfsleuth.cpu_cache_projections.pointers import Pointer
from perfsleuth.cpu_cache_projections.struct_types import Field, Struct
from perfsleuth.cpu_cache_projections.trace import Trace
from perfsleuth.errors import UserError
from perfsleuth.present.cpu_cache_text import where

BASE = 0x108000
OBJECTS = 0x4000000  # 320-byte objects, one per call


def trace_of(calls):
    return Trace("f", "prog", BASE, 64, calls, len(calls), 0, 0, 0, 0, 0, {BASE + 4: "f.c:7"})


def packet_call(index, last_ack_offset=264):
    obj = OBJECTS + 320 * index
    return [
        ("I", BASE, 4, BASE),
        ("L", obj, 4, BASE),
        ("I", BASE + 4, 4, BASE + 4),
        ("M", obj + 8, 8, BASE + 4),
        ("S", obj + last_ack_offset, 8, BASE + 4),
        ("L", 0x1FFF000580, 8, BASE + 4),  # the stack: the same line every call
    ]


def test_footprint_counts_lines_per_call_and_separates_shared_ones():
    fp = footprint.project(trace_of([packet_call(i) for i in range(4)]))
    assert fp["per_call"]["data_lines"]["median"] == 3
    assert fp["per_call"]["code_lines"]["max"] == 1
    assert fp["shared_data_lines"] == 1
    assert fp["per_call"]["private_data_lines"]["median"] == 2
    assert fp["per_call"]["data_bytes"]["median"] == 4 + 8 + 8 + 8
    assert fp["by_source"][0]["source"] == "f.c:7"


def scaled_runs():
    return [
        {
            "n": n,
            "data_lines": 10 + 2 * n,
            "data_pages": 5 + n // 8,
            "cached_lines": 10 + 3 * n,
            "calls": 4 * n,
            "misses": {"L1d": 0, "L2": 0},
        }
        for n in (1000, 2000, 8000)
    ]


def test_scaling_fits_lines_per_n_and_predicts_each_cliff():
    result = scaling.project(scaled_runs(), parse_spec("line=64,L1d=32K:8,L2=512K:8,prefetch=none"))
    assert result["fit"]["lines_per_n"] == pytest.approx(2.0)
    cliffs = {c["level"]: c for c in result["cliffs"]}
    assert cliffs["L1d"]["n"] == (512 - 10) // 2 and not cliffs["L1d"]["in_range"]
    assert cliffs["L2"]["n"] == (8192 - 10) // 2 and cliffs["L2"]["in_range"]


def test_with_a_prefetcher_the_cliffs_come_from_the_lines_it_brings_in():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,LLC=8M:16")
    result = scaling.project(scaled_runs(), geometry)
    assert result["fit"]["of"] == "cached_lines"
    assert result["fit"]["touched_lines_per_n"] == pytest.approx(2.0)
    cliffs = {c["level"]: c for c in result["cliffs"]}
    # 2 lines touched and 1 prefetched per n: the L2 holds the prefetched one low in
    # its LRU order, at half a line's room; the LLC holds it whole
    assert cliffs["L2"]["n"] == round((8192 - 10) / 2.5)
    assert cliffs["L2"]["working_set"] == "cached_lines"
    assert cliffs["L2"]["prefetched_room"] == 0.5
    assert cliffs["LLC"]["n"] == round((131072 - 10) / 3)
    assert "prefetched_room" not in cliffs["LLC"]
    # the prefetcher fills the L2, not the L1d: the L1d holds the lines touched
    assert cliffs["L1d"]["working_set"] == "data_lines"
    assert cliffs["L1d"]["n"] == round((512 - 10) / 2)
    assert result["fit"]["touched_intercept_lines"] == pytest.approx(10)


def test_the_tlb_cliff_comes_from_the_pages_per_n_and_the_measured_reach():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8")
    result = scaling.project(scaled_runs(), geometry, {"tlb": {"reach_pages": 2048}})
    tlb = result["tlb"]
    assert tlb["available"] and tlb["pages_per_n"] == pytest.approx(1 / 8)
    assert tlb["n"] == (2048 - 5) * 8 and not tlb["in_range"]
    inside = scaling.project(scaled_runs(), geometry, {"tlb": {"reach_pages": 300}})["tlb"]
    assert inside["n"] == (300 - 5) * 8 and inside["in_range"]


def test_without_a_measured_reach_the_tlb_cliff_says_why():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8")
    result = scaling.project(scaled_runs(), geometry, {"tlb": {"reason": "no native extension"}})
    assert result["tlb"] == {"available": False, "reason": "no native extension"}


def test_the_llc_cliff_uses_its_measured_capacity_and_keeps_the_nominal_one():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,LLC=8M:16,prefetch=none")
    measured = {"llc": {"effective_bytes": 1 << 19, "nominal_bytes": 8 << 20, "evidence": "e"}}
    llc = scaling.project(scaled_runs(), geometry, measured)["cliffs"][-1]
    assert llc["capacity_source"] == "measured" and llc["capacity_lines"] == 8192
    assert llc["n"] == round((8192 - 10) / 2) and llc["in_range"]
    assert llc["nominal_capacity_lines"] == 131072
    assert llc["nominal_n"] == round((131072 - 10) / 2)
    assert llc["effective"]["evidence"] == "e"


def test_a_level_already_outgrown_at_the_smallest_n_has_its_cliff_below_the_range():
    # 8 lines per n from 10 lines on: L1d's 512 lines are full before n = 64
    runs = [{**run, "data_lines": 10 + 8 * run["n"]} for run in scaled_runs()]
    result = scaling.project(runs, parse_spec("line=64,L1d=32K:8,L2=512K:8,prefetch=none"))
    l1d = result["cliffs"][0]
    assert l1d["below_range"] and not l1d["in_range"]
    assert l1d["n"] == round((512 - 10) / 8)
    assert not result["cliffs"][1]["below_range"] and result["cliffs"][1]["in_range"]


def test_a_fit_whose_intercept_is_over_capacity_still_puts_the_cliff_below_the_range():
    # a large constant (a table's buckets) over the L1d: the fit never crosses it
    runs = [{**run, "data_lines": 600 + 2 * run["n"]} for run in scaled_runs()]
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,prefetch=none")
    l1d = scaling.project(runs, geometry)["cliffs"][0]
    assert l1d["below_range"] and not l1d["in_range"]
    assert l1d["n"] is not None and l1d["n"] < 1000


def test_a_working_set_that_grows_by_steps_has_its_cliff_between_the_runs_it_crosses_at():
    # under the L2's 8,192 lines at n = 1,000, over it from 1,500 (a table's buckets
    # doubled): the fit's intercept is over the capacity, so the fit crosses at no
    # positive n; the L2 was printed "never" (issue 29)
    sizes = {1000: 8000, 1500: 16000, 4000: 17000}
    runs = [
        {**run, "n": n, "data_lines": lines}
        for (n, lines), run in zip(sizes.items(), scaled_runs(), strict=True)
    ]
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,prefetch=none")
    result = scaling.project(runs, geometry)
    intercept, slope = result["fit"]["intercept_lines"], result["fit"]["lines_per_n"]
    assert slope > 0 and intercept > 8192  # over at every n of the fit
    l2 = result["cliffs"][1]
    assert l2["in_range"] and not l2["below_range"]
    assert l2["n"] == round(1000 + (8192 - 8000) * 500 / 8000)  # between 1,000 and 1,500
    assert where(l2, 1000) == f"n = {l2['n']:,} (inside the measured range)"


def test_the_runs_are_simulated_with_the_llc_size_its_cliff_uses():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,LLC=8M:16")
    llc = {"effective_bytes": 5_000_000, "nominal_bytes": 8 << 20}
    resized = scaling.model_geometry(geometry, llc).levels
    assert resized[:2] == geometry.levels[:2]
    assert resized[2].size == 5_000_000 // (16 * 64) * 16 * 64
    result = scaling.project(scaled_runs(), geometry, {"llc": llc})
    assert result["geometry"]["levels"][2]["size"] == resized[2].size
    assert result["cliffs"][2]["capacity_lines"] * 64 == pytest.approx(resized[2].size, rel=1e-3)
    assert scaling.model_geometry(geometry, {"reason": "not measured"}) == geometry


def test_without_a_measured_llc_its_cliff_is_from_sysfs_and_says_why():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,LLC=8M:16,prefetch=none")
    unmeasured = {"llc": {"reason": "no clear knee"}}
    llc = scaling.project(scaled_runs(), geometry, unmeasured)["cliffs"][-1]
    assert llc["capacity_source"] == "sysfs" and llc["capacity_lines"] == 131072
    assert llc["effective"] == {"available": False, "reason": "no clear knee"}
    measured = {"llc": {"effective_bytes": 1 << 20}}
    l2 = scaling.project(scaled_runs(), geometry, measured)["cliffs"][1]
    assert l2["capacity_source"] == "sysfs"  # only the last level is measured


@pytest.mark.parametrize("spec", ["1000,2000", "n=1000", "n=0,10"])
def test_scale_spec_needs_two_positive_sizes(spec):
    with pytest.raises(UserError):
        scaling.parse_scale(spec)


@pytest.mark.parametrize("spec", ["n=" + ",".join(str(n) for n in range(1, 18)), "n=10,2000000000"])
def test_scale_spec_is_bounded(spec):
    with pytest.raises(
        UserError, match="at most 16 sizes .one run each., none above 1,000,000,000"
    ):
        scaling.parse_scale(spec)


def test_variants_are_bounded(tmp_path):
    secrets = tmp_path / "secrets.txt"
    secrets.write_text("\n".join(f"secret{i}" for i in range(65)))
    with pytest.raises(UserError, match="65 secrets; give at most 64"):
        constant_time.read_variants(str(secrets))
    secrets.write_text("\n".join(f"secret{i}" for i in range(64)))
    assert len(constant_time.read_variants(str(secrets))) == 64


def test_constant_time_names_the_branch_where_the_secrets_part():
    same = trace_of([packet_call(0)])
    other_path = trace_of(
        [[("I", BASE, 4, BASE), ("I", BASE + 4, 4, BASE + 4), ("I", BASE + 9, 1, BASE + 9)]]
    )
    one_path = trace_of(
        [[("I", BASE, 4, BASE), ("I", BASE + 4, 4, BASE + 4), ("I", BASE + 8, 1, BASE + 8)]]
    )
    assert constant_time.project([same, trace_of([packet_call(0)])])["constant_time"]
    verdict = constant_time.project([one_path, other_path])
    assert not verdict["constant_time"]
    assert verdict["differences"][0]["what"] == "branch outcome"
    assert verdict["differences"][0]["first_source"] == "f.c:7"


def test_constant_time_sees_a_secret_dependent_cache_line():
    verdict = constant_time.project(
        [trace_of([packet_call(0)]), trace_of([packet_call(0, 8 + 64)])]
    )
    assert verdict["differences"][0]["what"] == "cache line touched"


def test_variants_substitute_the_secret_or_feed_it_on_stdin():
    assert constant_time.substitute(["p", "--key={secret}"], "k") == (["p", "--key=k"], None)
    assert constant_time.substitute(["p"], "k") == (["p"], "k\n")


def fields(*rows):
    """Fields laid one after the other in each line (64 B lines)."""
    out, used = [], {}
    for n, s, line, hot in rows:
        offset = line * 64 + used.get(line, 0)
        used[line] = used.get(line, 0) + s
        out.append({"name": n, "size": s, "bytes": s, "offset": offset, "bit_size": None,
                    "bit_offset": None, "line": line, "hot": hot,
                    "touched": 1.0 if hot else 0.0})  # fmt: skip
    return out


def heat_of(rows, lines):
    """Each line touched by every visit when a hot field starts on it."""
    return [1.0 if any(r["hot"] and r["line"] == i for r in rows) else 0.0 for i in range(lines)]


def test_reordering_moves_the_lone_hot_field_into_the_hot_line():
    rows = fields(
        ("state", 4, 0, True),
        ("seq", 8, 0, True),
        ("spare", 8, 0, False),
        ("pad", 44, 0, False),
        ("cold", 56, 1, False),
        ("last_ack", 8, 1, True),
    )
    plan = layout.reordering(rows, layout.line_rows(rows, 64, heat_of(rows, 2)), 64)
    assert plan == {
        "move": ["last_ack"],
        "from_line": 1,
        "to_line": 0,
        "swap_out": ["spare"],
        "lines_per_object_before": 2,
        "lines_per_object_after": 1,
    }


def test_when_the_least_hot_line_has_no_room_the_other_line_moves():
    # line 0: one hot byte of flags and a cold union; line 1: only a hot timestamp
    rows = fields(("flags", 1, 0, True), ("addr", 16, 0, False), ("last_seen", 8, 1, True))
    move = layout.reordering(rows, layout.line_rows(rows, 64, heat_of(rows, 2)), 64)
    assert move["move"] == ["last_seen"] and move["swap_out"] == ["addr"]
    assert (move["from_line"], move["to_line"]) == (1, 0)


def test_no_reordering_when_the_hot_fields_need_every_hot_line():
    rows = fields(("a", 60, 0, True), ("b", 60, 1, True))
    assert layout.reordering(rows, layout.line_rows(rows, 64, heat_of(rows, 2)), 64) is None


ENTRY = Struct("entry", 112, [Field("key", "int", 0, 4), Field("value", "char[20]", 4, 20),
                              Field("name", "char[32]", 24, 32),
                              Field("hh", "UT_hash_handle", 56, 56)])  # fmt: skip
ENTRIES = 0x5000000


def test_a_line_holding_hot_bytes_of_a_field_from_the_line_before_is_hot():
    # a hash lookup reads hh.hh_next (offset 88) and hh.hashv (108): line 1's bytes
    visits = [
        Visit(i, ENTRIES + 112 * i, [("L", ENTRIES + 112 * i + 88, 8, BASE),
                                     ("L", ENTRIES + 112 * i + 108, 4, BASE)])
        for i in range(8)
    ]  # fmt: skip
    owner = {"parameter": None, "variable": "e", "variable_kind": "local"}
    result = layout.layout_of(ENTRY, visits, 64, owner)
    line0, line1 = result["lines"]
    assert line1["hot_fields"] == ["hh"] and line1["hot_bytes"] == 48 and line1["touched"] == 1.0
    assert line0["hot_fields"] == [] and "hh" in line0["cold_fields"] and line0["touched"] == 0
    hot = [f["name"] for f in result["fields"] if f["hot"]]
    assert hot == ["hh"]


def test_the_parameter_object_is_where_the_accesses_through_the_parameter_point():
    # find(table, key): table->hh.tbl (offset 56) through the parameter, then the
    # chain's handles (hh_next, hashv) through untyped hh pointers: displacements
    # from hh, which alone would vote for an object starting at hh
    parameter = Pointer("table", "parameter", ENTRY, None)
    head, tbl_pc = ENTRIES, BASE + 0x40
    calls = []
    for i in range(6):
        node = ENTRIES + 112 * (i + 1) + 56
        chain = [("L", node + 32, 8, BASE + 0x80), ("L", node + 52, 4, BASE + 0x84)]
        calls.append([("L", head + 56, 8, tbl_pc), *chain, ("L", node + 40, 8, BASE + 0x88)])
    trace = Trace("find", "prog", BASE, 64, calls, 6, 0, 0, 0, 0, 0, {})
    typed = {tbl_pc - BASE: (parameter, 56)}
    assert all(layout.parameter_base(call, trace, typed) == ("table", head) for call in calls)
    owner = {"parameter": "table", "variable": "table", "variable_kind": "parameter"}
    visits = [Visit(i, head, call) for i, call in enumerate(calls)]
    table = layout.layout_of(ENTRY, visits, 64, owner)
    assert [f["name"] for f in table["fields"] if f["hot"]] == ["hh"]
    assert table["lines"][0]["hot_fields"] == ["hh"] and table["lines"][1]["touched"] == 0
    assert layout.parameter_base(calls[0], trace, {}) is None  # no DWARF: the votes decide


TABLE = Struct("Table", 48, [Field("next", "GCObject *", 0, 8), Field("tt", "lu_byte", 8, 1),
                             Field("lsizenode", "lu_byte", 11, 1),
                             Field("node", "Node *", 24, 8)])  # fmt: skip
TVALUE = Struct("TValue", 16, [Field("value_", "Value", 0, 8), Field("tt_", "lu_byte", 8, 1)])


def test_the_parameter_layout_is_of_the_parameter_the_accesses_go_through(monkeypatch):
    """Lua's luaH_get(Table *t, const TValue *key, TValue *res) reads key->tt_ and
    key->value_ and hands t to a callee: the layout is *key's, not *t's with key's
    accesses (which marked Table's next and tt hot, its node and lsizenode cold)."""
    key = Pointer("key", "parameter", TVALUE, None)
    monkeypatch.setattr(
        layout, "parameter_structs", lambda *_: ([("t", TABLE), ("key", TVALUE)], "")
    )
    calls = [
        [("L", 0x7000 + 32 * i + 8, 1, BASE + 0x10), ("L", 0x7000 + 32 * i, 8, BASE + 0x14)]
        for i in range(4)
    ]
    trace = Trace("luaH_get", "lua", BASE, 64, calls, 4, 0, 0, 0, 0, 0, {})
    typed = {0x10: (key, 8), 0x14: (key, 0)}
    found, _ = layout.parameter_layout(trace, typed, lambda _address: False)
    assert found is not None and found["parameter"] == "key"
    assert found["struct"] == "TValue"
    assert [f["name"] for f in found["fields"] if f["hot"]] == ["value_", "tt_"]


def test_an_anonymous_struct_is_named_by_its_typedef_as_pahole_names_it(tmp_path):
    # Verstable's and stb_ds's tables are `typedef struct {...} NAME;`: their layout
    # was "struct (anonymous)"
    source = tmp_path / "t.c"
    source.write_text(
        "typedef struct { long count; long mask; int *slots; } table_t;\n"
        "struct named { int a; };\n"
        "__attribute__((noinline)) long find(table_t *t, struct named *n, long key) {\n"
        "  return t->slots[key & t->mask] + n->a;\n}\n"
        "int main(void) { return 0; }\n"
    )
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(source)], check=True)
    structs, _ = layout.parameter_structs(str(exe), "find")
    (_, table), (_, named) = structs
    assert (table.name, table.typedef, named.name, named.typedef) == (
        "table_t",
        True,
        "named",
        False,
    )
    fields = [layout.field_row(f, Counter(), 1, 64) for f in table.fields]
    shown = layout.render(table, fields, 64).splitlines()
    assert (shown[0], shown[-1]) == ("typedef struct {", "} table_t;")


ITEM = Struct("item", 72, [Field("key", "uint64_t", 0, 8), Field("value", "struct record", 8, 64)])


def test_an_object_the_accesses_reach_past_the_end_of_is_not_of_the_parameters_struct(
    monkeypatch,
):
    """stb_ds's find_item(item *map, key) hands map to stbds_hmget_key_ts, whose
    accesses agree on its hash index's header (displacements 8, 56 and 96, recorded):
    with none through map, that header was laid out as `*map`, an item with `value`
    hot in every call and `key` cold."""
    monkeypatch.setattr(layout, "parameter_structs", lambda *_: ([("map", ITEM)], ""))
    header = 0x40360A0
    disps = {BASE + 0x1BFA: 56, BASE + 0x1C84: 8, BASE + 0x1CA2: 96, BASE + 0x1FA7: 96}
    monkeypatch.setattr(layout, "displacement", lambda _exe, pc: disps.get(pc + BASE))
    calls = [
        [("L", header + disp, 8, pc) for pc, disp in disps.items()]
        + [("M", 0x4A3C6A8 + 72 * i, 8, BASE + 0x2B6D)]  # found->value.hits, untyped here
        for i in range(4)
    ]
    trace = Trace("find_item", "stbds_lookup", BASE, 64, calls, 4, 0, 0, 0, 0, 0, {})
    found, reason = layout.parameter_layout(trace, {}, lambda _address: False)
    assert found is None
    assert "reach bytes 8 to 104 of it, past the end of struct item (72 B)" in reason
    # within the struct, the same votes lay it out as before
    disps[BASE + 0x1CA2] = disps[BASE + 0x1FA7] = 40
    found, _ = layout.parameter_layout(trace, {}, lambda _address: False)
    assert found is not None and found["parameter"] == "map"


def test_hot_members_of_a_struct_inside_a_base_class_are_moved_within_it():
    """libstdc++'s unordered_map node keeps the user's Session inside the base class
    _Hash_node_value, never moved: its hits (node line 0) and last_seen (line 1) had
    no reordering. last_seen moves to line 0 within Session, peer (cold, of Session
    too) down; the key, pair.first, is not Session's and stays."""
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "unordered_map_node_layout.json"
    node = json.loads(fixture.read_text())
    assert node["reorder"] is None  # as recorded
    move = layout.reordering(node["fields"], node["lines"], node["line_size"])
    assert move == {
        "move": ["_M_storage.second.last_seen"],
        "from_line": 1,
        "to_line": 0,
        "swap_out": ["_M_storage.second.peer"],
        "lines_per_object_before": 2,
        "lines_per_object_after": 1,
    }
