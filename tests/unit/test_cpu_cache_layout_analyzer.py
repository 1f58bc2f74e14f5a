import json
from pathlib import Path

from cache_store import context_with

from perfsleuth.analyzers import cpu_cache_layout
from perfsleuth.cpu_cache_projections.layout import reordering

LAYOUT = {
    "available": True,
    "struct": "conn",
    "parameter": "c",
    "size": 320,
    "line_size": 64,
    "lines_touched_per_call": 2.0,
    "pahole": "struct conn { ... }",
    "lines": [
        {"line": 0, "hot_fields": ["state", "seq"], "cold_fields": ["flags"]},
        {"line": 4, "hot_fields": ["last_ack"], "cold_fields": ["errors", "owner"]},
    ],
    "reorder": {
        "move": ["last_ack"],
        "from_line": 4,
        "to_line": 0,
        "swap_out": ["flags"],
        "lines_per_object_before": 2,
        "lines_per_object_after": 1,
    },
}


def test_a_lone_hot_field_is_named_with_the_reordering(tmp_path):
    ctx = context_with(tmp_path, {"handle_packet": {"layout": LAYOUT}})
    [finding] = cpu_cache_layout.analyze(ctx)
    assert finding.kind == "cache-layout"
    assert "last_ack" in finding.title and finding.details["field"] == "last_ack"
    assert finding.share == 0.6
    assert finding.estimated_gain == 0.6 * 0.5 * cpu_cache_layout.MISS_BOUND_FRACTION
    assert "128 B -> 64 B" in " ".join(finding.evidence)
    assert "move last_ack into cache line 0" in finding.suggestion


def test_no_finding_without_a_reordering_or_without_type_info(tmp_path):
    packed = {**LAYOUT, "reorder": None}
    unknown = {"available": False, "reason": "no DWARF"}
    ctx = context_with(tmp_path, {"a": {"layout": packed}, "b": {"layout": unknown}})
    assert cpu_cache_layout.analyze(ctx) == []


def test_the_same_move_seen_from_a_caller_is_one_finding(tmp_path):
    # main's trace includes handle_packet's: the same field of the same struct
    ctx = context_with(tmp_path, {"handle_packet": {"layout": LAYOUT}, "main": {"layout": LAYOUT}})
    [finding] = cpu_cache_layout.analyze(ctx)
    assert finding.function == "main"  # main's share (100%) makes the larger gain
    assert "the same move is found in the traces of handle_packet" in finding.evidence


def test_no_finding_when_the_objects_as_placed_touch_no_more_lines_than_the_move_gives(
    tmp_path,
):
    # tidwall/hashmap.c's map: hot fields on 3 lines of its aligned layout, but at byte
    # 32 of a line they lie on 2, as many as the move of `buckets` would give
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "hashmap_get_layout.json"
    layout = json.loads(fixture.read_text())
    assert layout["reorder"]["lines_per_object_after"] == 2
    assert layout["lines_touched_per_call"] == 2.0
    ctx = context_with(tmp_path, {"hashmap_get": {"layout": layout}})
    assert cpu_cache_layout.analyze(ctx) == []


def test_no_finding_for_one_object_every_call_reads(tmp_path):
    # stb_ds's stbds_hm_find_slot reads its one hash index header (104 B, `storage`
    # alone on line 1) in each of 313 calls: the move saves no miss, where the finding
    # ranked first with an estimated gain of 23%
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "stbds_find_slot_layout.json"
    layout = json.loads(fixture.read_text())
    assert (layout["objects"], layout["visits"]) == (1, 313)
    assert layout["reorder"]["move"] == ["storage"]
    ctx = context_with(tmp_path, {"stbds_hm_find_slot": {"layout": layout}})
    assert cpu_cache_layout.analyze(ctx) == []
    # many objects, each reached about once: the finding
    spread = {**layout, "objects": 300}
    ctx = context_with(tmp_path, {"stbds_hm_find_slot": {"layout": spread}})
    [finding] = cpu_cache_layout.analyze(ctx)
    assert finding.details["field"] == "storage"


def test_a_move_inside_a_base_class_names_the_members_beside_it(tmp_path):
    """unordered_map's node: last_seen of the user's Session, inside libstdc++'s base
    class, alone on the node's line 1; its neighbours are Session's members and the
    key, not the base class (`<ancestor _Hash_node_value<...>>`)."""
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "unordered_map_node_layout.json"
    node = json.loads(fixture.read_text())
    node["reorder"] = reordering(node["fields"], node["lines"], node["line_size"])
    ctx = context_with(tmp_path, {"lookup_session": {"layout": node}})
    [finding] = cpu_cache_layout.analyze(ctx)
    assert finding.suggestion.startswith(
        "move _M_storage.second.last_seen into cache line 0 next to _M_storage.first, "
        "_M_storage.second.hits, and move _M_storage.second.peer (cold) down to line 1"
    )
    assert (
        "line 1: hot _M_storage.second.last_seen; cold _M_storage.second.peer, "
        "_M_storage.second.bytes_in, _M_storage.second.bytes_out" in finding.evidence
    )
