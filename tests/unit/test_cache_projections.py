"""Footprint, scaling, constant-time and layout projections on small hand-made traces."""

import pytest

from perfsleuth.cpu_cache_projections import footprint, layout, scaling
from perfsleuth.cpu_cache_projections import secret_variants as constant_time
from perfsleuth.cpu_cache_projections.model import parse_spec
from perfsleuth.cpu_cache_projections.trace import Trace
from perfsleuth.errors import UserError

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
    result = scaling.project(scaled_runs(), parse_spec("line=64,L1d=32K:8,L2=512K:8"))
    assert result["fit"]["of"] == "cached_lines"
    assert result["fit"]["touched_lines_per_n"] == pytest.approx(2.0)
    cliffs = {c["level"]: c for c in result["cliffs"]}
    assert cliffs["L2"]["n"] == round((8192 - 10) / 3)
    assert cliffs["L2"]["working_set"] == "cached_lines"
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
    return [
        {"name": n, "size": s, "bytes": s, "line": line, "hot": hot, "touched": 1.0 if hot else 0.0}
        for n, s, line, hot in rows
    ]


def test_reordering_moves_the_lone_hot_field_into_the_hot_line():
    rows = fields(
        ("state", 4, 0, True),
        ("seq", 8, 0, True),
        ("spare", 8, 0, False),
        ("pad", 44, 0, False),
        ("cold", 56, 1, False),
        ("last_ack", 8, 1, True),
    )
    plan = layout.reordering(rows, layout.line_rows(rows, 128, 64), 64)
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
    move = layout.reordering(rows, layout.line_rows(rows, 72, 64), 64)
    assert move["move"] == ["last_seen"] and move["swap_out"] == ["addr"]
    assert (move["from_line"], move["to_line"]) == (1, 0)


def test_no_reordering_when_the_hot_fields_need_every_hot_line():
    rows = fields(("a", 60, 0, True), ("b", 60, 1, True))
    assert layout.reordering(rows, layout.line_rows(rows, 128, 64), 64) is None


def offsets_of(places, lines=6400):
    """line_offsets for `lines` lines spread evenly over these places in the page."""
    return [lines // len(places) if place in places else 0 for place in range(64)]


def test_lines_spread_over_every_place_in_the_page_use_the_whole_level():
    l2 = parse_spec("line=64,L2=1M:8").levels[0]
    assert scaling.set_groups(l2, 64) == 64
    assert scaling.usable_share(offsets_of(range(64)), 64) == pytest.approx(1.0, abs=0.002)
    assert scaling.usable_share(None, 64) == 1.0


@pytest.mark.parametrize(("places", "share"), [(range(0, 64, 2), 0.5), (range(0, 64, 4), 0.25)])
def test_lines_at_few_places_in_the_page_fill_only_their_sets(places, share):
    # 128-byte and 256-byte objects whose first line is all that is brought in
    assert scaling.usable_share(offsets_of(places), 64) == pytest.approx(share, rel=0.01)


def test_uneven_places_put_the_knee_where_the_fuller_sets_overflow():
    # two lines of every 4 at one place's share, one at half of it: the fuller
    # group (2/3 of the lines) overflows first, at 3/8 of the capacity
    counts = [[200, 100, 0, 0][place % 4] for place in range(64)]
    assert scaling.usable_share(counts, 64) == pytest.approx(0.375, rel=0.02)


def test_a_level_with_fewer_sets_than_lines_in_a_page_folds_the_places():
    tiny = parse_spec("line=64,L1d=4K:4").levels[0]  # 16 sets
    assert scaling.set_groups(tiny, 64) == 16
    # places 0, 16, 32, 48 share one set; 0..15 cover all 16 sets
    assert scaling.usable_share(offsets_of(range(16)), 16) == pytest.approx(1.0, abs=0.002)
    assert scaling.usable_share(offsets_of([0, 16, 32, 48]), 16) == pytest.approx(1 / 16, rel=0.01)


def test_the_cliffs_come_from_the_usable_part_of_each_level():
    geometry = parse_spec("line=64,L1d=32K:8,L2=512K:8,prefetch=none")
    runs = [r | {"line_offsets": offsets_of(range(0, 64, 2))} for r in scaled_runs()]
    cliffs = {c["level"]: c for c in scaling.project(runs, geometry)["cliffs"]}
    l2 = cliffs["L2"]
    assert l2["capacity_lines"] == 8192
    assert l2["usable_share"] == pytest.approx(0.5, rel=0.01)
    assert l2["usable_lines"] == round(8192 * l2["usable_share"])
    assert l2["n"] == round((l2["usable_lines"] - 10) / 2)


def test_lines_at_random_places_are_not_taken_for_a_layout_that_empties_sets():
    import random

    chance = random.Random(7)
    for lines in (300, 2000, 20000):
        counts = [0] * 64
        for _ in range(lines):
            counts[chance.randrange(64)] += 1
        assert scaling.usable_share(counts, 64) == 1.0
    # a few hundred lines of 256-byte objects still show their two places in four
    assert scaling.usable_share(offsets_of(range(0, 64, 2), lines=320), 64) == pytest.approx(
        0.5, rel=0.02
    )
