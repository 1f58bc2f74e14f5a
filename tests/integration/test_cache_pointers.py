"""Struct layouts reached through neither a parameter nor a global, recorded with
the real fntrace tool on examples/cache/pointers.c (GCC -O2 -g): a local pointer
from array indexing (`f = &t->flows[i]`) or pointer arithmetic (`f = flows + i`),
placed in a register by DWARF's location list, and a heap pointer held in another
struct (`s->peer->...`, followed back to the load of `s->peer`). Each gets its own
layout, the finding names its struct and field, and the parameter's layout is not
mixed up with the pointed-to object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cache_show import cache_doc, layout_members, pahole_members, record_cache
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration


def traced(tmp_path: Path, binary: Path, function: str) -> tuple[dict, dict]:
    store = record_cache(tmp_path / function, binary, function, "500", "3000", calls=50)
    findings = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)["findings"]
    [finding] = [f for f in findings if f["kind"] == "cache-layout"]
    layouts = {layout["variable"]: layout for layout in cache_doc(store)["layouts"]}
    return layouts, finding


def hot(layout: dict) -> set[str]:
    return {f["name"] for f in layout["fields"] if f["hot"]}


def test_a_local_from_array_indexing_is_laid_out(examples_built, tmp_path):
    binary = examples_built / "pointers"
    layouts, finding = traced(tmp_path, binary, "account")
    flow = layouts["f"]
    assert (flow["variable_kind"], flow["struct"]) == ("local", "flow")
    assert hot(flow) == {"packets", "bytes", "last_ns"}
    assert layout_members(flow) == pahole_members(binary, "flow")
    assert flow["visits"] == flow["calls"]  # one flow per packet
    assert (finding["details"]["struct"], finding["details"]["field"]) == ("flow", "last_ns")
    assert finding["details"]["variable"] == "*f"
    assert hot(layouts["t"]) == {"n", "flows"}  # the parameter: the table, not a flow


def test_a_local_from_pointer_arithmetic_is_laid_out(examples_built, tmp_path):
    layouts, finding = traced(tmp_path, examples_built / "pointers", "touch")
    flow = layouts["f"]  # `flows + i`, in the register that held flows
    assert (flow["variable_kind"], flow["struct"]) == ("local", "flow")
    assert hot(flow) == {"packets", "last_ns"}
    assert finding["details"]["struct"] == "flow" and finding["details"]["variable"] == "*f"
    reorder = finding["details"]["reorder"]
    assert reorder["move"] in (["packets"], ["last_ns"])  # either joins the other's line
    assert (reorder["lines_per_object_before"], reorder["lines_per_object_after"]) == (2, 1)


def test_a_heap_pointer_held_in_a_struct_is_laid_out(examples_built, tmp_path):
    binary = examples_built / "pointers"
    layouts, finding = traced(tmp_path, binary, "deliver")
    peer = layouts["s->peer"]
    assert (peer["variable_kind"], peer["struct"]) == ("member", "peer")
    assert hot(peer) == {"rx_bytes", "rx_packets", "rtt_ns"}
    assert layout_members(peer) == pahole_members(binary, "peer")
    assert (finding["details"]["struct"], finding["details"]["field"]) == ("peer", "rtt_ns")
    assert finding["details"]["variable"] == "*s->peer"
    assert "struct peer (*s->peer)" in finding["title"]
    assert hot(layouts["s"]) == {"peer"}  # the socket itself: only its pointer is read
