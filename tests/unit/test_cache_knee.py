"""The knee estimator: where a latency curve's misses begin."""

import pytest

from perfsleuth.cpu_cache_projections import knee as estimator


def lru_latency(capacity, sizes, hit=5.0, penalty=40.0):
    """Uniform random access to an LRU structure of `capacity` entries."""
    return [(x, hit + penalty * max(0.0, 1 - capacity / x)) for x in sizes]


SIZES = [round(128 * 2 ** (i / 4)) for i in range(29)]


@pytest.mark.parametrize("capacity", [300, 2048, 9000])
def test_the_knee_of_an_lru_curve_is_its_capacity(capacity):
    knee = estimator.knee(lru_latency(capacity, SIZES))
    assert knee == pytest.approx(capacity, rel=0.05)


def test_noise_moves_the_knee_little():
    noise = [0.9, -0.7, 0.4, -1.0, 0.2, 0.8, -0.3, -0.6, 1.0, -0.2]
    noisy = [(x, y + noise[i % len(noise)]) for i, (x, y) in enumerate(lru_latency(2048, SIZES))]
    assert estimator.knee(noisy) == pytest.approx(2048, rel=0.1)


def test_a_flat_or_falling_curve_has_no_knee():
    assert estimator.knee([(x, 5.0) for x in SIZES]) is None
    assert estimator.knee([(x, 100.0 / x) for x in SIZES]) is None


def test_a_second_rise_far_past_the_knee_does_not_pull_it():
    two_levels = [(x, y + 60 * max(0.0, 1 - 4000 / x)) for x, y in lru_latency(1000, SIZES)]
    assert estimator.knee(two_levels) == pytest.approx(1000, rel=0.1)
    assert estimator.lru_fit(two_levels) > 1.1 * 1000  # the single fit is pulled along


def test_the_levels_below_enter_the_fit_at_their_knees():
    # a TLB-like rise at 2,000 still climbing where an LLC-like one begins at 6,000
    rise = [(x, 60 * estimator.misses(2000, x) + 80 * estimator.misses(6000, x)) for x in SIZES]
    curve = [(x, 5 + y) for x, y in rise]
    window = [(x, y) for x, y in curve if 3000 <= x <= 12000]
    assert estimator.knee(window, below=[2000]) == pytest.approx(6000, rel=0.05)
    assert estimator.knee(window) < 0.9 * 6000  # alone, the lower rise pulls it early


def test_least_squares_solves_a_known_line_and_refuses_dependent_columns():
    xs = [1.0, 2.0, 3.0, 4.0]
    coefficients, residual = estimator.least_squares([xs], [3 + 2 * x for x in xs])
    assert coefficients == pytest.approx([2.0]) and residual == pytest.approx(0, abs=1e-9)
    assert estimator.least_squares([xs, [2 * x for x in xs]], xs) is None


def test_two_levels_overflowed_over_the_whole_window_enter_as_one():
    # L2 at 500 and TLB at 2,000 have both overflowed where the LLC begins at
    # 8,000: their columns 1 - K/x are dependent with the intercept, and the fit
    # must not come out singular (it found no knee at all)
    curve = [
        (x, 5 + 4 * estimator.misses(500, x) + 20 * estimator.misses(2000, x)
         + 80 * estimator.misses(8000, x))
        for x in SIZES
    ]  # fmt: skip
    window = [(x, y) for x, y in curve if 4000 <= x <= 16000]
    assert estimator.knee(window, below=[500, 2000]) == pytest.approx(8000, rel=0.05)
    assert estimator.knee(window, below=[500, 2000, 30000]) == pytest.approx(8000, rel=0.05)


def chain_steps(entries):
    """The entries a lookup passes in a table whose buckets double when the chains
    average 3.8 (uthash's saw): 1.5 to 2.9."""
    buckets = 32
    while entries / buckets > 3.8:
        buckets *= 2
    return 1 + entries / buckets / 2


@pytest.mark.parametrize("window", [(167, 670), (179, 716), (200, 800), (100, 1000)])
def test_a_programs_own_work_growing_with_x_enters_the_fit(window):
    """Chains lengthening between doublings raise the latency inside the cache:
    fitted as misses, the saw puts the knee early; as work, it does not."""
    low, high = window
    sizes = [round(100 * 2 ** (i / 16)) for i in range(60) if low <= 100 * 2 ** (i / 16) <= high]
    work = {x: chain_steps(x) for x in sizes}
    curve = [(x, 14 + 3 * work[x] + 8 * estimator.misses(330, x)) for x in sizes]
    assert estimator.knee(curve, work=work) == pytest.approx(330, rel=0.03)
    assert estimator.knee(curve) < 0.95 * 330
