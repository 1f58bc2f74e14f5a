"""The TLB cliff of a working set that grows by a table's doublings (doubling.py)."""

import pytest

from perfsleuth.cpu_cache_projections import doubling, scaling
from perfsleuth.cpu_cache_projections.model import parse_spec

GEOMETRY = parse_spec("line=64,L1d=32K:8,L2=512K:8")
REACH = {"tlb": {"reach_pages": 3113}}
# Verstable (72-byte buckets, doubling past 0.9 load) under `record --mode cache --scale`:
# the distinct pages find_record touched at each n (examples/cache/verstable_lookup.c)
VERSTABLE_PAGES = {500: 22, 600: 22, 700: 22, 800: 22, 900: 22,
                   1000: 40, 1200: 40, 1400: 40, 1700: 40, 2000: 77}  # fmt: skip


def runs(pages):
    return [
        {"n": n, "data_lines": 10 * n, "data_pages": p, "cached_lines": 10 * n, "calls": 4 * n,
         "misses": {}}
        for n, p in pages.items()
    ]  # fmt: skip


def test_a_table_that_doubles_has_its_tlb_cliff_at_the_doubling_past_the_reach():
    tlb = scaling.project(runs(VERSTABLE_PAGES), GEOMETRY, REACH)["tlb"]
    steps = tlb["steps"]
    # the runs put the doubling between 900 and 1,000 keys (Verstable's: 921.6)
    assert steps["doubles_between"] == pytest.approx([900, 1000])
    assert steps["doubles_at_n"] == pytest.approx(948.68, abs=0.01)
    # 1,024 buckets of 72 bytes are 18 pages: 0.0176 pages per key held, plus the metadata
    assert steps["per_capacity_n"] == pytest.approx(0.0194, abs=0.0003)
    # the doubling at 948.68 * 2^7 keys takes the pages from ~2,322 to ~4,640, past 3,113
    assert tlb["n"] == 121_432 and not tlb["in_range"]
    assert doubling.pages_at(steps, 121_431) < 3113 <= doubling.pages_at(steps, 121_432)


# tsl::hopscotch_map (80-byte buckets, 61 more than the capacity, doubling past 0.9
# load) under `record --mode cache --scale`: examples/cache/hopscotch_lookup.cc
HOPSCOTCH_PAGES = {500: 23, 600: 23, 700: 23, 800: 23, 900: 23,
                   1000: 42, 1200: 42, 1400: 42, 1700: 42, 2000: 82}  # fmt: skip


def test_steps_whose_free_fit_slopes_down_a_little_are_still_steps():
    """The free fit gave these pages b = -0.0006 per n, and the steps were refused
    for a negative slope: the TLB's cliff came from the line, at 92,911 keys, where
    the table's pages pass the reach at its doubling past 117,965."""
    tlb = scaling.project(runs(HOPSCOTCH_PAGES), GEOMETRY, REACH)["tlb"]
    steps = tlb["steps"]
    assert steps["per_n"] == 0.0
    assert steps["doubles_between"] == pytest.approx([900, 1000])
    # 1,024 buckets of 80 bytes are 20 pages: 0.0212 pages per key held at 0.9 load
    assert steps["per_capacity_n"] == pytest.approx(0.0206, abs=0.0005)
    assert tlb["n"] == 121_432


def test_runs_that_catch_one_phase_each_keep_the_straight_line():
    three = {n: VERSTABLE_PAGES[n] for n in (500, 1000, 2000)} | {4000: 148}
    tlb = scaling.project(runs(three), GEOMETRY, REACH)["tlb"]
    assert "steps" not in tlb
    assert tlb["pages_per_n"] == pytest.approx(0.0363, abs=0.0005)


def test_pages_that_grow_with_n_keep_the_straight_line():
    # a connection table's objects: n/8 pages, off by a page here and there
    pages = {n: 5 + n // 8 + (n % 3 == 0) for n in (1000, 1300, 1700, 2200, 2900, 3800, 5000)}
    tlb = scaling.project(runs(pages), GEOMETRY, REACH)["tlb"]
    assert "steps" not in tlb
    assert tlb["n"] == pytest.approx((3113 - 5) * 8, rel=0.01)


def test_pages_growing_inside_each_phase_cross_the_reach_inside_one():
    # items in an array (one page per 50) and an index that doubles past 1,000 * 2^k
    pages = {n: 2 + n / 50 + doubling.capacity_n(n, 1000) / 100
             for n in (600, 750, 900, 1100, 1400, 1700, 1900)}  # fmt: skip
    steps = doubling.steps(list(pages.items()))
    assert steps is not None and steps["per_n"] == pytest.approx(0.02, rel=0.01)
    n = doubling.crossing(steps, 3113, scaling.MAX_N)
    assert n is not None
    # inside the phase from the doubling at ~64,000 (995 * 2^6) to the next: 2 + 1,280
    # pages at the index's capacity there, and the items' n / 50 make up the rest
    assert doubling.pages_at(steps, n - 1) < 3113 <= doubling.pages_at(steps, n)
    assert n == pytest.approx((3113 - 2 - 1280) * 50, rel=0.01)


def test_the_text_says_the_table_doubles():
    tlb = scaling.project(runs(VERSTABLE_PAGES), GEOMETRY, REACH)["tlb"]
    text = doubling.pages_text(tlb, len(VERSTABLE_PAGES))
    assert "doubles past 949 * 2^k" in text and "between 900 and 1,000" in text


def test_capacity_is_the_n_of_the_next_doubling():
    assert doubling.capacity_n(1000, 1000) == 1000
    assert doubling.capacity_n(1001, 1000) == 2000
    assert doubling.capacity_n(501, 1000) == 1000
    assert doubling.capacity_n(500, 1000) == 500


def test_a_line_through_too_few_runs_to_show_steps_says_so():
    three = {n: VERSTABLE_PAGES[n] for n in (500, 1000, 2000)}
    tlb = scaling.project(runs(three), GEOMETRY, REACH)["tlb"]
    said = doubling.pages_text(tlb, len(three))
    assert "a line through 3 runs: 5 or more --scale sizes" in said
    assert "runs:" not in doubling.pages_text(tlb, doubling.MIN_RUNS)
    stepped = scaling.project(runs(VERSTABLE_PAGES), GEOMETRY, REACH)["tlb"]
    assert "capacity" in doubling.pages_text(stepped, len(VERSTABLE_PAGES))
