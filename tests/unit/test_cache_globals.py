"""Global struct variables: accesses attributed per array element, their layouts
marked hot and cold, every layout of a run considered by the cache-layout analyzer,
and `cache show` naming whose struct each layout is."""

import io

from cache_store import context_with
from rich.console import Console

from perfsleuth.analyzers import cpu_cache_layout
from perfsleuth.cpu_cache_projections import globals, layout
from perfsleuth.cpu_cache_projections.struct_types import Field, Struct
from perfsleuth.cpu_cache_projections.trace import Trace
from perfsleuth.present import cpu_cache_text

BASE = 0x108000
SESSION = Struct(
    "session",
    128,
    [
        Field("state", "uint32_t", 0, 4),
        Field("flags", "uint32_t", 4, 4),
        Field("hits", "uint64_t", 8, 8),
        Field("notes", "char[48]", 16, 48),
        Field("peer", "char[56]", 64, 56),
        Field("last_seen", "uint64_t", 120, 8),
    ],
)
STATS = Struct(
    "stats", 16, [Field("requests", "uint64_t", 0, 8), Field("errors", "uint64_t", 8, 8)]
)
TABLE = globals.StructVariable("sessions", 0x4000, SESSION, 8, external=False)
COUNTERS = globals.StructVariable("stats", 0x3F00, STATS, 1, external=True)
VARIABLES = (COUNTERS, TABLE)  # by address, as struct_variables returns them


def trace_of(calls):
    return Trace("serve", "prog", BASE, 64, calls, len(calls), 0, 0, 0, 0, 0)


def element(index, offset):
    return TABLE.address + BASE + 128 * index + offset


def serve_call(index, last_seen=True):
    """state and hits of sessions[index], maybe last_seen; stats.requests; the stack."""
    call = [
        ("I", BASE + 0x1380, 4, BASE + 0x1380),
        ("L", element(index, 0), 4, BASE + 0x1380),
        ("M", element(index, 8), 8, BASE + 0x1384),
        ("M", COUNTERS.address + BASE, 8, BASE + 0x1388),
        ("L", 0x1FFF000580, 8, BASE + 0x138C),
    ]
    if last_seen:
        call.append(("S", element(index, 120), 8, BASE + 0x1390))
    return call


def test_accesses_are_split_per_call_and_array_element():
    visits = globals.touched(VARIABLES, trace_of([serve_call(2), serve_call(5), serve_call(2)]))
    assert {(v.call, v.start - BASE - TABLE.address) for v in visits[TABLE]} == {
        (0, 256),
        (1, 640),
        (2, 256),
    }
    assert [len(v.accesses) for v in visits[TABLE]] == [3, 3, 3]
    assert [len(v.accesses) for v in visits[COUNTERS]] == [1, 1, 1]


def test_accesses_outside_every_variable_and_instruction_fetches_are_left_out():
    beyond_the_table = ("L", element(8, 0), 4, BASE)
    fetch_inside = ("I", element(0, 0), 4, element(0, 0))
    visits = globals.touched(VARIABLES, trace_of([[beyond_the_table, fetch_inside]]))
    assert visits == {}


def test_a_global_array_is_laid_out_per_element_with_hot_and_cold_fields():
    calls = [serve_call(i, last_seen=i % 4 == 0) for i in range(8)]  # last_seen: 2 of 8
    [table] = [
        lay for lay in layout.global_layouts(trace_of(calls), VARIABLES) if lay["elements"] > 1
    ]
    hot = {f["name"]: f["hot"] for f in table["fields"]}
    assert hot == {
        "state": True,
        "flags": False,
        "hits": True,
        "notes": False,
        "peer": False,
        "last_seen": True,  # 25% of the visits: exactly HOT_FRACTION
    }
    assert table["variable"] == "sessions" and table["variable_kind"] == "static"
    assert table["parameter"] is None
    assert (table["elements"], table["elements_touched"], table["visits"]) == (8, 8, 8)
    assert table["lines_touched_per_call"] == 1.25
    assert table["reorder"]["move"] == ["last_seen"]


def test_globals_are_ranked_by_their_accesses():
    ranked = layout.global_layouts(trace_of([serve_call(1)]), VARIABLES)
    assert [(lay["variable"], lay["variable_kind"]) for lay in ranked] == [
        ("sessions", "static"),
        ("stats", "global"),
    ]
    assert ranked[1]["fields"][0]["hot"] and not ranked[1]["fields"][1]["hot"]


def test_addresses_inside_a_global_do_not_vote_for_a_parameter_object():
    inside = globals.inside_one(VARIABLES, BASE)
    assert inside(element(7, 127)) and inside(COUNTERS.address + BASE + 15)
    assert not inside(element(8, 0)) and not inside(COUNTERS.address + BASE + 16)
    assert not inside(0x1FFF000580)


def layout_doc(variable, kind, reorder, elements=1):
    return {
        "available": True,
        "struct": "session",
        "parameter": variable if kind == "parameter" else None,
        "variable": variable,
        "variable_kind": kind,
        "elements": elements,
        "elements_touched": 3,
        "size": 128,
        "line_size": 64,
        "lines_touched_per_call": 2.0,
        "pahole": "struct session { ... }",
        "fields": [],
        "lines": [
            {"line": 0, "hot_fields": ["state"], "cold_fields": ["flags"], "touched": 1.0},
            {"line": 1, "hot_fields": ["last_seen"], "cold_fields": ["peer"], "touched": 0.5},
        ],
        "reorder": reorder,
    }


REORDER = {
    "move": ["last_seen"],
    "from_line": 1,
    "to_line": 0,
    "swap_out": ["flags"],
    "lines_per_object_before": 2,
    "lines_per_object_after": 1,
}


def test_the_analyzer_considers_every_layout_of_a_function(tmp_path):
    layouts = [
        layout_doc("req", "parameter", None),
        layout_doc("sessions", "static", REORDER, elements=4096),
    ]
    ctx = context_with(tmp_path, {"handle_packet": {"layout": layouts[0], "layouts": layouts}})
    [finding] = cpu_cache_layout.analyze(ctx)
    assert "static sessions[4096]" in finding.title
    assert finding.details["variable"] == "static sessions[4096]"
    assert finding.details["field"] == "last_seen"
    assert "512 KiB -> 256 KiB" in " ".join(finding.evidence)


def test_cache_show_names_whose_struct_each_layout_is():
    out = io.StringIO()
    console = Console(file=out, width=200, no_color=True)
    cpu_cache_text.render_layout(layout_doc("sessions", "static", REORDER, elements=4096), console)
    cpu_cache_text.render_layout(layout_doc("c", "parameter", None), console)
    text = out.getvalue()
    assert "struct layout of static sessions[4096] (struct session, 128 B per element, 3 " in text
    assert "struct layout of *c (struct session, 128 B)" in text
