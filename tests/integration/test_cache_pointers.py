"""Struct layouts reached through neither a parameter nor a global, recorded with the
real fntrace tool on examples/cache/pointers.c built by GCC -O2, clang-16 -O2 and
GCC -O0 (all -g): a local pointer from array indexing (`f = &t->flows[i]`) or
pointer arithmetic (`f = flows + i`), placed in a register by DWARF's location
list (GCC -O2), addressed as an element of the array it indexes (clang's
`disp(base,index)`, named by f's computed location) or reloaded from its stack
slot (-O0), an array element indexed without a local (`t->flows[i].x`), and a heap
pointer held in another struct (`s->peer->...`, followed back to the load of
`s->peer`, also across a call). Each gets its own layout matching pahole's for
that binary, the finding names the same struct and field for both compilers, and
the parameter's layout is not mixed up with the pointed-to object.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cache_show import cache_doc, layout_members, pahole_members, record_cache
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

BIN = Path(__file__).resolve().parents[2] / "examples" / "bin"


@pytest.fixture(params=["pointers", "pointers-clang", "pointers-O0"])
def binary(request, examples_built) -> Path:
    return BIN / request.param


def traced(tmp_path: Path, binary: Path, function: str) -> tuple[dict, dict]:
    store = record_cache(tmp_path / function, binary, function, "500", "3000", calls=50)
    findings = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)["findings"]
    [finding] = [f for f in findings if f["kind"] == "cache-layout"]
    layouts = {layout["variable"]: layout for layout in cache_doc(store)["layouts"]}
    return layouts, finding


def hot(layout: dict) -> set[str]:
    return {f["name"] for f in layout["fields"] if f["hot"]}


def laid_out(
    binary: Path, layouts: dict, finding: dict, variable: str, kind: str, struct: str
) -> dict:
    """The layout of variable: its kind, its struct, the struct pahole gives, and the
    finding's owner."""
    layout = layouts[variable]
    assert (layout["variable_kind"], layout["struct"]) == (kind, struct)
    assert layout_members(layout) == pahole_members(binary, struct)
    assert (finding["details"]["struct"], finding["details"]["variable"]) == (
        struct,
        f"*{variable}",
    )
    return layout


def test_a_local_from_array_indexing_is_laid_out(binary, tmp_path):
    layouts, finding = traced(tmp_path, binary, "account")
    flow = laid_out(binary, layouts, finding, "f", "local", "flow")
    assert hot(flow) == {"packets", "bytes", "last_ns"}
    assert flow["visits"] == flow["calls"]  # one flow per packet
    assert finding["details"]["field"] == "last_ns"
    assert hot(layouts["t"]) == {"n", "flows"}  # the parameter: the table, not a flow


def test_an_element_indexed_without_a_local_is_laid_out_as_the_arrays(binary, tmp_path):
    layouts, finding = traced(tmp_path, binary, "bump")
    flow = laid_out(binary, layouts, finding, "t->flows[]", "member", "flow")
    assert hot(flow) == {"packets", "last_ns"}
    assert flow["visits"] == flow["calls"]  # one flow per packet
    assert hot(layouts["t"]) == {"n", "flows"}  # the table is not mixed up with a flow


def test_a_local_from_pointer_arithmetic_is_laid_out(binary, tmp_path):

    layouts, finding = traced(tmp_path, binary, "touch")
    flow = laid_out(
        binary, layouts, finding, "f", "local", "flow"
    )  # in the register that held flows
    assert hot(flow) == {"packets", "last_ns"}
    reorder = finding["details"]["reorder"]
    assert reorder["move"] in (["packets"], ["last_ns"])  # either joins the other's line
    assert (reorder["lines_per_object_before"], reorder["lines_per_object_after"]) == (2, 1)


# relay: deliver with a call in between, across which s->peer is kept or reloaded
@pytest.mark.parametrize("function", ["deliver", "relay"])
def test_a_heap_pointer_held_in_a_struct_is_laid_out(binary, tmp_path, function):
    layouts, finding = traced(tmp_path, binary, function)
    peer = laid_out(binary, layouts, finding, "s->peer", "member", "peer")
    assert hot(peer) == {"rx_bytes", "rx_packets", "rtt_ns"}
    assert finding["details"]["field"] == "rtt_ns"
    assert "struct peer (*s->peer)" in finding["title"]
    assert hot(layouts["s"]) == {"peer"}  # the socket itself: only its pointer is read


@pytest.mark.parametrize(
    ("program", "function", "struct"),
    [("conntable", "handle_packet", "conn"), ("sessions", "serve", "session")],
)
def test_the_connection_tables_built_by_clang_get_gccs_finding(
    examples_built, tmp_path, program, function, struct
):
    found = {}
    for build in (program, f"{program}-clang"):
        store = record_cache(tmp_path / build, BIN / build, function, "500", "300", calls=200)
        advice = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)
        [finding] = [f for f in advice["findings"] if f["kind"] == "cache-layout"]
        [layout] = [lay for lay in cache_doc(store)["layouts"] if lay["struct"] == struct]
        assert layout_members(layout) == pahole_members(BIN / build, struct)
        details = finding["details"]
        found[build] = (details["struct"], details["variable"], details["field"], hot(layout))
    assert found[program] == found[f"{program}-clang"]
    assert found[program][0] == struct
