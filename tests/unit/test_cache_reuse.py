"""The knee of a run's own miss curve, from its reuse times (reuse.py)."""

import random

import pytest

from perfsleuth.cpu_cache_projections import reuse


def times_of(lines):
    times = reuse.ReuseTimes(64)
    for line in lines:
        times.access(line)
    return times


def uniform(count, accesses, seed=1):
    """Random lines of `count`, each call also touching one line every call does
    (the stack)."""
    rng = random.Random(seed)
    for _ in range(accesses):
        yield rng.randrange(count)
        yield -1


def chained(entries, per_bucket, calls, seed=3):
    """Lookups in a chained hash table: each walks its bucket's chain, passing the
    handle line of every entry before the one it finds, then reads that entry's
    key line (as uthash's find does)."""
    rng = random.Random(seed)
    buckets = [[] for _ in range(entries // per_bucket)]
    for entry in range(entries):
        buckets[rng.randrange(len(buckets))].append(entry)
    place = {entry: (b, i) for b, chain in enumerate(buckets) for i, entry in enumerate(chain)}
    for _ in range(calls):
        bucket, index = place[rng.randrange(entries)]
        yield -1  # the table's head
        for entry in buckets[bucket][: index + 1]:
            yield 2 * entry + 1  # the handle, passed
        yield 2 * buckets[bucket][index]  # the key of the entry found


def test_the_footprint_is_the_mean_of_distinct_lines_over_every_window():
    rng = random.Random(7)
    lines = [rng.choice([1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) for _ in range(300)]
    footprint = reuse.Footprint(times_of(lines))
    for window in (1, 4, 17, 60, 299):
        spans = [len(set(lines[i : i + window])) for i in range(len(lines) - window + 1)]
        assert footprint.at(window) == pytest.approx(sum(spans) / len(spans))


def test_uniform_random_lines_miss_where_they_outgrow_the_cache():
    """1 - C/W, the miss ratio of an LRU cache of C lines over W random ones."""
    footprint = reuse.Footprint(times_of(uniform(1000, 16000)))
    for share in (0.25, 0.5, 0.75):
        lines = 1 + share * 1000  # the stack's line always held
        assert footprint.miss_ratio(lines) == pytest.approx(0.5 * (1 - share), abs=0.02)
    assert footprint.miss_ratio(1001) == 0.0


@pytest.mark.parametrize("count", [500, 2000])
def test_uniform_access_has_its_knee_at_the_lines_touched(count):
    assert times_of(uniform(count, 8 * count)).factor() == pytest.approx(1.0, abs=0.02)


def test_hash_chains_hold_their_often_passed_handles_past_the_lines_touched():
    """Eight entries a bucket: a handle near a chain's head is passed on most of
    its bucket's lookups, a key read on one lookup in n; one entry a bucket: every
    line is touched alike."""
    long_chains = times_of(chained(2000, 8, 8000)).factor()
    no_chains = times_of(chained(2000, 1, 8000)).factor()
    assert no_chains == pytest.approx(1.0, abs=0.02)
    assert long_chains > no_chains + 0.04


def test_a_run_too_short_has_no_factor():
    assert times_of(range(100)).factor() is None
    assert times_of(range(5000)).factor() is None  # no line used twice


def test_an_access_across_a_line_boundary_touches_both_lines():
    times = reuse.ReuseTimes(64)
    times.observe(60, 8)
    times.observe(64, 4)
    assert times.first == {0: 1, 1: 2}
    assert times.reuses == {1: 1}
