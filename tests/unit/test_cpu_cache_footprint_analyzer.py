import json
import re
from pathlib import Path

import pytest
from cache_store import context_with

from perfsleuth.analyzers import cpu_cache_footprint


def scaling(in_range: bool) -> dict:
    return {
        "fit": {"intercept_lines": 12.0, "lines_per_n": 2.0, "bytes_per_n": 128.0},
        "range": [1000, 100000],
        "runs": [{"n": 1000, "data_lines": 2012, "cached_lines": 2012,
                  "misses_per_call": {"LLC": 0.1}}],
        "cliffs": [
            {"level": "L2", "working_set": "cached_lines", "capacity_lines": 8192, "n": 4090,
             "in_range": in_range},
            {"level": "LLC", "working_set": "cached_lines", "capacity_lines": 524288,
             "n": 262138, "in_range": False},
        ],
        "geometry": {"line_size": 64, "prefetch": True, "levels": [
            {"name": "L2", "size": 512 << 10, "ways": 8},
            {"name": "LLC", "size": 32 << 20, "ways": 16},
        ]},
    }  # fmt: skip


def test_a_cliff_inside_the_scaled_range_is_reported(tmp_path):
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": scaling(True)}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert finding.kind == "cache-footprint"
    assert "exceeds L2 at n = 4,090" in finding.title
    assert finding.details["cliff"]["level"] == "L2"


def test_cliffs_outside_the_range_are_not(tmp_path):
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": scaling(False)}})
    assert cpu_cache_footprint.analyze(ctx) == []


def test_pages_past_the_measured_tlb_reach_inside_the_range_are_reported(tmp_path):
    doc = scaling(False)
    doc["runs"][0]["data_pages"] = 90
    doc["tlb"] = {"available": True, "reach_pages": 2048, "intercept_pages": 12.0,
                  "pages_per_n": 0.078, "n": 26103, "in_range": True,
                  "measured_at": "2026-11-22T05:00:00Z", "evidence": "36 ns vs 5 ns"}  # fmt: skip
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert "more pages than the TLB reaches at n = 26,103" in finding.title
    assert "huge pages" in finding.suggestion
    assert "(4 KiB pages)" in finding.evidence[0]  # a run stored before the mode was kept
    doc["tlb"]["transparent_huge_pages"] = "madvise"
    ctx = context_with(tmp_path / "madvise", {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert "transparent huge pages are `madvise` on this machine" in finding.evidence[0]
    doc["tlb"]["in_range"] = False
    ctx = context_with(tmp_path / "outside", {"handle_packet": {"scaling": doc}})
    assert cpu_cache_footprint.analyze(ctx) == []


def test_a_measured_llc_cliff_says_how_much_of_sysfs_size_is_left(tmp_path):
    doc = scaling(False)
    doc["cliffs"][1] |= {
        "capacity_lines": 39313, "capacity_source": "measured", "n": 19650, "in_range": True,
        "nominal_capacity_lines": 786432, "nominal_n": 393210,
        "effective": {"available": True, "evidence": "10.6 ns at 1.2 MiB, 74.5 ns at 4.8 MiB"},
    }  # fmt: skip
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert "exceeds LLC at n = 19,650" in finding.title
    said = " ".join(finding.evidence)
    assert "LLC holds 39,313 lines, measured" in said and "sysfs says 786,432" in said
    # the misses listed beside the cliff are simulated with the LLC it is computed for
    doc["geometry"]["levels"][1]["size"] = 39313 * 64 // 1024 * 1024
    ctx = context_with(tmp_path / "resized", {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert "misses per call simulated with L2 512K, LLC 2,457K" in finding.evidence


def test_a_cliff_brought_forward_by_few_sets_says_so(tmp_path):
    doc = scaling(True)
    doc["cliffs"][0] |= {"usable_share": 0.5, "usable_lines": 4096, "n": 2042}
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    said = " ".join(finding.evidence)
    assert "fill 50% of its sets' room (4,096 lines)" in said
    assert "odd number of lines" in finding.suggestion
    doc["cliffs"][0] |= {"usable_share": 0.998, "usable_lines": 8176}
    ctx = context_with(tmp_path / "even", {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert "sets' room" not in " ".join(finding.evidence)
    assert finding.suggestion.startswith("touch fewer cache lines per n")


def test_an_l2_cliff_says_the_room_it_gives_a_prefetched_line(tmp_path):
    doc = scaling(True)
    doc["cliffs"][0]["prefetched_room"] = 0.5
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    said = " ".join(finding.evidence)
    assert "nobody touched takes 50% of a line's room there" in said
    doc["cliffs"][0].pop("prefetched_room")
    ctx = context_with(tmp_path / "whole", {"handle_packet": {"scaling": doc}})
    assert "room" not in " ".join(cpu_cache_footprint.analyze(ctx)[0].evidence)


def test_a_run_with_fewer_calls_than_its_n_is_warned_of(tmp_path):
    doc = scaling(True)
    doc["runs"] = [
        {"n": 1000, "data_lines": 2012, "cached_lines": 2012, "calls": 4000,
         "misses_per_call": {"LLC": 0.1}},
        {"n": 8000, "data_lines": 9000, "cached_lines": 9000, "calls": 6000,
         "misses_per_call": {"LLC": 0.3}},
    ]  # fmt: skip
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    [warning] = [line for line in finding.evidence if line.startswith("warning:")]
    assert "fewer calls traced than n at n = 8,000 (6,000 calls)" in warning
    assert "n = 1,000" not in warning and "cliffs come late" in warning
    doc["runs"][1]["calls"] = 8000
    ctx = context_with(tmp_path / "enough", {"handle_packet": {"scaling": doc}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert not [line for line in finding.evidence if "warning" in line]


def test_cliffs_all_outside_the_range_are_said_to_be_in_a_note(tmp_path):
    """abseil's flat_hash_map scaled over 500..2,000 (the real projection): the L1d's
    cliff below the range, the others above it, and `advise` said only "no findings
    above the noise floor"."""
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "abseil_scaling.json"
    ctx = context_with(tmp_path, {"find_session": {"scaling": json.loads(fixture.read_text())}})
    assert cpu_cache_footprint.analyze(ctx) == []
    [note] = ctx.notes
    assert note.startswith("cache-footprint: no finding for find_session: ")
    assert "outside the scaled range 500..2,000 (L1d below it, L2 at n = 12,529" in note
    assert "TLB at n = 111,955" in note


def test_no_note_when_a_cliff_is_inside_the_range(tmp_path):
    ctx = context_with(tmp_path, {"handle_packet": {"scaling": scaling(True)}})
    cpu_cache_footprint.analyze(ctx)
    assert ctx.notes == []


def test_the_evidence_of_a_cliff_is_the_working_set_it_comes_from(tmp_path):
    """boost::unordered_flat_map's L2 cliff at n = 13,555 was shown with the fit of
    every line cached (-249 + 1.287 n: 17,197 lines there) and each run's lines
    touched alone (16,231 at n = 14,000, under the L2's 16,384): neither reaches the
    capacity where the cliff is. The L2's own is the lines touched and the prefetched
    ones at half a line's room."""
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "boostflat_scaling.json"
    ctx = context_with(tmp_path, {"find_session": {"scaling": json.loads(fixture.read_text())}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    cliff = finding.details["cliff"]
    assert cliff["level"] == "L2"
    fitted = re.search(r"working set = (-?[\d.]+) \+ ([\d.]+) x n", finding.evidence[0])
    assert fitted is not None
    at_cliff = float(fitted[1]) + float(fitted[2]) * cliff["n"]
    assert at_cliff == pytest.approx(cliff["usable_lines"], rel=0.01)
    assert any("16,231 lines touched, 18,455 cached: 17,343 held" in e for e in finding.evidence)


def test_a_cliff_between_two_runs_the_working_set_steps_between_says_so(tmp_path):
    """tsl::hopscotch_map's LLC cliff at n = 50,590 (between the runs at 50,000 and
    60,000, where the table doubles and its cached lines jump from 73,941 to 126,340)
    was shown with a fit that reaches the LLC's 77,033 lines at 42,471, before a run
    still under them: the evidence did not give the cliff it states."""
    fixture = Path(__file__).parents[1] / "fixtures" / "cache" / "hopscotch_llc_scaling.json"
    ctx = context_with(tmp_path, {"find_session": {"scaling": json.loads(fixture.read_text())}})
    [finding] = cpu_cache_footprint.analyze(ctx)
    assert (finding.details["cliff"]["level"], finding.details["cliff"]["n"]) == ("LLC", 50_590)
    assert "reaches the 77,033 lines at n = 42,471" in finding.evidence[0]
    assert "73,941 at n = 50,000 and 126,340 at n = 60,000" in finding.evidence[0]
