"""The cache document: what a version 1 document (written before versions, in any of
the shapes cache mode wrote) reads as, once upgraded; the current one round trips."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from perfsleuth.errors import UserError
from perfsleuth.model import cpu_cache as cache_model
from perfsleuth.model import documents
from perfsleuth.model.cpu_cache import CacheProjections
from perfsleuth.present import cpu_cache_text

FIELD = {"name": "state", "type": "int", "offset": 0, "size": 4, "line": 0, "touched": 1.0,
         "hot": True}  # fmt: skip
FIRST_LAYOUT = {
    "available": True,
    "struct": "conn",
    "parameter": "c",
    "size": 64,
    "line_size": 64,
    "object_misalignment": 0,
    "calls": 7,
    "fields": [FIELD],
    "lines": [
        {"line": 0, "hot_fields": ["state"], "cold_fields": [], "hot_bytes": 4, "touched": 1.0}
    ],  # fmt: skip
    "lines_touched_per_call": 1.0,
    "reorder": None,
    "pahole": "struct conn { ... }",
}
FIRST_SCALING = {
    "runs": [{"n": n, "data_lines": 2 * n, "cached_lines": 3 * n, "calls": n,
              "misses": {"L1d": n}, "misses_per_call": {"L1d": 1.0}} for n in (100, 200)],
    "fit": {"of": "cached_lines", "touched_lines_per_n": 2.0, "intercept_lines": 0.0,
            "lines_per_n": 3.0, "bytes_per_n": 192.0},
    "range": [100, 200],
    "cliffs": [{"level": "L1d", "capacity_lines": 512, "n": 170, "in_range": True}],
    "geometry": {"line_size": 64, "prefetch": True, "levels": []},
}  # fmt: skip


def version_1(**sections: object) -> dict:
    return {"function": "handle_packet", "executable": "/bin/conntable", "footprint": {},
            "model": {}, "layout": FIRST_LAYOUT, **sections}  # fmt: skip


def test_a_first_layout_becomes_the_only_one_of_its_pointer_parameter():
    doc = documents.load(CacheProjections, version_1())
    assert doc.layouts == [doc.layout]
    layout = doc.layouts[0]
    assert (layout["variable"], layout["variable_kind"], layout["visits"]) == ("c", "parameter", 7)
    assert layout["fields"] == [
        FIELD
        | {
            "bit_offset": None,
            "bit_size": None,
            "bytes": 4,
            "ancestor": False,
            "fixed": False,
        }  # fmt: skip
    ]


def test_without_a_layout_there_is_none_to_list():
    none = {"available": False, "reason": "no DWARF"}
    doc = documents.load(CacheProjections, version_1(layout=none))
    assert (doc.layout, doc.layouts) == (none, [])


def test_first_scalings_say_what_was_not_predicted_or_counted():
    scaling = documents.load(CacheProjections, version_1(scaling=FIRST_SCALING)).scaling
    assert scaling is not None
    assert scaling["tlb"] == {
        "available": False,
        "reason": "recorded before TLB cliffs were predicted",
    }
    assert {run["data_pages"] for run in scaling["runs"]} == {None}
    assert {run["line_offsets"] for run in scaling["runs"]} == {None}
    [cliff] = scaling["cliffs"]
    assert (cliff["capacity_source"], cliff["working_set"]) == ("sysfs", "cached_lines")
    assert (cliff["usable_share"], cliff["usable_lines"]) == (1.0, 512)


def test_cache_show_prints_an_old_document_as_before():
    doc = version_1(scaling=FIRST_SCALING)
    doc["footprint"] = {
        "line_size": 64, "calls_recorded": 7, "calls_total": 7, "shared_data_lines": 1,
        "per_call": dict.fromkeys(["data_lines", "code_lines", "data_bytes", "instructions",
                                   "loads", "stores", "private_data_lines"],
                                  {"min": 1, "median": 1, "mean": 1, "max": 1}),
        "whole_run": {"data_lines": 9, "code_lines": 3}, "by_source": [],
    }  # fmt: skip
    doc["model"] = {"describe": "L1d 32K 8-way", "misses_per_call": {"L1d": 0.5}}
    upgraded = documents.load(CacheProjections, doc)
    out = io.StringIO()
    cpu_cache_text.render({"functions": [upgraded.to_json()]}, Console(file=out, width=300))
    text = out.getvalue()
    assert "struct layout of *c (struct conn, 64 B): 1.00 of its cache lines" in text
    assert "exceeds L1d (512 lines) at n = 170 (inside the measured range)" in text
    assert "TLB: not predicted (recorded before TLB cliffs were predicted)" in text


def test_a_cliff_below_the_measured_range_is_said_as_such():
    scale = documents.load(CacheProjections, version_1(scaling=FIRST_SCALING)).scaling
    assert scale is not None
    scale["cliffs"][0] |= {"n": 60, "in_range": False, "below_range": True}
    scale["geometry"]["levels"] = [{"name": "L1d", "size": 32768, "ways": 8}]
    out = io.StringIO()
    cpu_cache_text.render_scaling(scale, Console(file=out, width=300))
    text = out.getvalue()
    assert "misses simulated with L1d 32K" in text
    assert "at an n below the measured range (already over at n = 100; about n = 60" in text
    assert "never" not in text


def test_the_current_version_round_trips_and_a_newer_one_is_refused():
    doc = documents.load(CacheProjections, version_1(scaling=FIRST_SCALING))
    dumped = documents.dump(doc)
    assert dumped["version"] == CacheProjections.VERSION
    assert documents.load(CacheProjections, dumped) == doc
    with pytest.raises(UserError, match="newer than this perfsleuth understands"):
        documents.load(CacheProjections, {**dumped, "version": CacheProjections.VERSION + 1})


def version_2(**sections: object) -> dict:
    doc = documents.load(CacheProjections, version_1(**sections)).to_json()
    del doc["sampling"]
    doc["footprint"] = {"calls_recorded": 200, "calls_total": 5000}
    return {**doc, "version": 2}


def test_a_version_2_document_traced_the_first_calls():
    sampling = documents.load(CacheProjections, version_2()).sampling
    assert sampling == {"chosen": "first", "every": 1, "calls_seen": 5000, "calls_traced": 200,
                        "budget_s": None, "out_of_time": False}  # fmt: skip


def test_the_sampling_is_said_in_one_line_and_not_for_the_first_calls():
    doc = documents.load(CacheProjections, version_1(scaling=FIRST_SCALING)).to_json()
    doc["sampling"] = {"chosen": "auto", "every": 512, "calls_seen": 200_000,
                       "calls_traced": 391, "budget_s": 300.0, "out_of_time": False}  # fmt: skip
    text = cache_model.sampling_text(CacheProjections.from_json(doc).sampling)
    assert text == "1 in 512 calls traced (391 of 200,000, over the whole run)"
    first = documents.load(CacheProjections, version_2()).sampling
    assert cache_model.sampling_text(first) == ""


def test_an_object_straddling_a_line_boundary_is_said_to_when_calls_pay_for_it():
    """khash's table header (40 B) starts at byte 48 of a line: calls touch 2 lines."""
    header = {"size": 40, "line_size": 64, "object_misalignment": 48}
    said = cpu_cache_text.straddling({**header, "lines_touched_per_call": 2.0})
    assert (
        "starts at byte 48 of a line, so it spans 2 lines; aligned to 64 B it would span 1" in said
    )
    assert cpu_cache_text.straddling({**header, "lines_touched_per_call": 1.0}) == ""
    inside = {"size": 40, "line_size": 64, "object_misalignment": 16}  # bytes 16..55: one line
    assert cpu_cache_text.straddling({**inside, "lines_touched_per_call": 1.5}) == ""


def test_objects_whose_touched_bytes_cross_a_line_boundary_are_said_to():
    """stb_ds's 72-byte items (an array: they start at every eighth byte of a line):
    key, hits and last_seen lie in the struct's line 0, and a lookup touches 1.87
    lines, which `line 1: cold` beside it did not explain."""
    item = {"size": 72, "line_size": 64, "object_misalignment": 8,
            "lines": [{"touched": 1.0}, {"touched": 0.0}]}  # fmt: skip
    said = cpu_cache_text.straddling({**item, "lines_touched_per_call": 1.87})
    assert said == (
        " (the bytes touched lie in 1.00 of the struct's lines; the objects start at other "
        "bytes of a line (most at byte 8), so those bytes cross a line boundary)"
    )
    assert cpu_cache_text.straddling({**item, "lines_touched_per_call": 1.0}) == ""


def test_cache_show_says_how_many_misses_are_first_touches():
    """A scaled run's n = 500 traced 200 calls of a 57 KB uthash table: `L2 1.94,
    LLC 1.94` read as a table no cache holds; every one was a line's first touch."""
    sim = {"describe": "L1d 32K 8-way, L2 1M 8-way, LLC 32M 16-way",
           "misses_per_call": {"L1d": 2.29, "L2": 1.94, "LLC": 1.94},
           "first_touches_per_call": 1.94}  # fmt: skip
    console = Console(record=True, width=400)
    cpu_cache_text.render_model(sim, console)  # type: ignore[arg-type]
    text = console.export_text()
    assert "misses per call L1d 2.29, L2 1.94, LLC 1.94" in text
    assert "1.94 of them first touches" in text
    del sim["first_touches_per_call"]  # recorded before they were counted
    console = Console(record=True, width=400)
    cpu_cache_text.render_model(sim, console)  # type: ignore[arg-type]
    assert "first touches" not in console.export_text()


def test_cache_show_says_how_many_misses_are_a_crossing_accesss_second_line():
    """abseil's flat_hash_map over 200,000 entries, every call traced: L1d 2.47
    misses per call where cachegrind counts 2.26; 0.21 are the second lines of
    control-byte loads that cross a line boundary, one miss with the first for
    cachegrind (2.47 - 0.21 = 2.26)."""
    sim = {"describe": "L1d 32K 8-way, L2 1M 8-way, LLC 32M 16-way",
           "misses_per_call": {"L1d": 2.471, "L2": 1.342, "LLC": 1.083},
           "split_misses_per_call": {"L1d": 0.212, "L2": 0.006, "LLC": 0.004}}  # fmt: skip
    console = Console(record=True, width=400)
    cpu_cache_text.render_model(sim, console)  # type: ignore[arg-type]
    text = console.export_text()
    assert "(L1d 0.21, L2 0.01 of them the second line of an access that crosses" in text
    del sim["split_misses_per_call"]  # recorded before they were counted
    console = Console(record=True, width=400)
    cpu_cache_text.render_model(sim, console)  # type: ignore[arg-type]
    assert "crosses" not in console.export_text()
