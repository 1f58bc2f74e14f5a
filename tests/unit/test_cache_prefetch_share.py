"""The prefetch share: how often the line beside a touched one comes along, from
the shift that lays a one-line-per-128-bytes chase onto a dense one."""

import pytest

from perfsleuth.cache import prefetch_share
from perfsleuth.cache.knee import misses
from perfsleuth.cache.model import parse_spec

GEOMETRY = parse_spec("line=64,L1d=32K:8,L2=1M:8,LLC=32M:16")
L2_LINES = 16384


def machine(share: float, rise: float = 20.0):
    """ns per load of an LRU L2 whose adjacent-line prefetcher fetches `share` of
    the neighbours: the sparse chase holds 1 + share lines per line it touches."""

    def chase_ns(lines, slot_bytes, huge=False, first_line=False):
        assert huge, "the chases must run on huge pages (no TLB misses)"
        held = L2_LINES if slot_bytes == 64 else L2_LINES / (1 + share)
        return 5.0 + rise * misses(held, lines)

    return chase_ns


@pytest.mark.parametrize("share", [0.0, 0.6, 1.0])
def test_the_share_is_the_shift_between_the_two_curves_less_one(share):
    curve, percent, evidence = prefetch_share.measure_once(machine(share), GEOMETRY)
    assert percent == pytest.approx(100 * share, abs=2)
    assert sorted(curve) == prefetch_share.sweep(GEOMETRY)
    assert f"with {1 + share:.2f}x the lines" in evidence


def test_the_sweep_runs_from_a_quarter_of_the_l2_to_four_times_it():
    lines = prefetch_share.sweep(GEOMETRY)
    assert lines[0] == L2_LINES // 4 and lines[-1] == 4 * L2_LINES
    assert len(lines) == 4 * prefetch_share.POINTS + 1


def test_a_curve_that_does_not_rise_gives_no_share():
    curve, percent, evidence = prefetch_share.measure_once(machine(0.5, rise=0.0), GEOMETRY)
    assert percent is None and evidence.startswith("no L2 overflow in the sweep")


def test_without_huge_pages_or_an_l2_it_says_why(tmp_path):
    thp = tmp_path / "enabled"
    thp.write_text("always madvise [never]\n")
    assert "transparent huge pages are off" in prefetch_share.unavailable(GEOMETRY, thp)
    thp.write_text("always [madvise] never\n")
    assert prefetch_share.unavailable(GEOMETRY, thp) is None
    assert "missing" in prefetch_share.unavailable(GEOMETRY, tmp_path / "absent")
    single = parse_spec("line=64,L1d=32K:8")
    assert "single cache level" in prefetch_share.unavailable(single, thp)


def test_the_curve_is_read_between_its_points_in_log_x():
    curve = {1000: 10.0, 4000: 30.0}
    assert prefetch_share.at(curve, 2000) == pytest.approx(20.0)
    assert prefetch_share.at(curve, 500) == 10.0 and prefetch_share.at(curve, 9000) == 30.0
