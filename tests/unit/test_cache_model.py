"""The set-associative LRU model with its next-line prefetcher, the estimate for
sampled calls (sampled_reuse.py), and geometry parsing."""

import random

import pytest

from perfsleuth.cpu_cache_projections.model import (
    CacheModel,
    Geometry,
    Level,
    machine_geometry,
    parse_spec,
    simulate,
)
from perfsleuth.cpu_cache_projections.spatial_sample import thinned
from perfsleuth.cpu_cache_projections.trace import Trace
from perfsleuth.errors import UserError


def one_level(size: int, ways: int, prefetch: bool = False) -> CacheModel:
    return CacheModel(Geometry(64, (Level("L1d", size, ways),), prefetch))


def test_lru_evicts_the_least_recently_used_way():
    model = one_level(2 * 64, 2)  # one set of two ways
    for line in (1, 2, 1, 3):  # 3 evicts 2, the least recently used
        model.access(line)
    assert model.access(1) == 0
    assert model.access(2) == 1  # memory
    assert model.misses == [4]


def test_sets_are_independent():
    model = one_level(4 * 64, 1)  # four sets, direct mapped
    for line in range(4):
        model.access(line)
    assert [model.access(line) for line in range(4)] == [0, 0, 0, 0]
    assert model.access(4) == 1  # conflicts with line 0 only
    assert model.access(1) == 0


def test_next_line_prefetch_turns_a_stream_into_half_misses():
    model = one_level(64 * 64, 8, prefetch=True)
    for line in range(100):
        model.access(line)
    assert model.misses == [50]


def test_the_prefetcher_fills_the_levels_below_the_first():
    model = CacheModel(parse_spec("line=64,L1d=4K:8,L2=64K:8"))
    model.access(0)
    assert model.access(1) == 1  # not in the L1d, in the L2
    assert model.misses == [2, 1]
    assert model.filled == {0, 1, 2} and model.touched == {0, 1}  # 1 fetched 2


def test_a_miss_fills_every_level_that_missed():
    model = CacheModel(parse_spec("line=64,L1d=128:2,L2=1K:2,prefetch=none"))
    for line in (0, 2, 4):  # one L1 set: 0 is evicted from L1, kept in L2
        model.access(line)
    assert model.access(0) == 1


def test_parse_spec_reads_sizes_ways_and_prefetch():
    geometry = parse_spec("line=128,L1d=32K:8,LLC=8M:16,prefetch=none")
    assert geometry.line_size == 128
    assert [(lv.name, lv.size, lv.ways) for lv in geometry.levels] == [
        ("L1d", 32768, 8),
        ("LLC", 8 << 20, 16),
    ]
    assert not geometry.prefetch


@pytest.mark.parametrize(
    "spec", ["line=60,L1d=32K:8", "L1d=32K", "L1d=32Q:8", "line=64,L1d=1000:3"]
)
def test_bad_specs_say_how_to_write_one(spec):
    with pytest.raises(UserError):
        parse_spec(spec)


def test_machine_geometry_reads_sysfs(tmp_path):
    for index, (level, kind, size, ways) in enumerate(
        [
            (1, "Data", "48K", 12),
            (1, "Instruction", "32K", 8),
            (2, "Unified", "2048K", 16),
            (3, "Unified", "36864K", 12),
        ]
    ):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("ways_of_associativity", ways),
            ("coherency_line_size", 64),
        ):
            (folder / name).write_text(f"{value}\n")
    geometry = machine_geometry(tmp_path)
    assert [(lv.name, lv.size, lv.ways) for lv in geometry.levels] == [
        ("L1d", 48 << 10, 12),
        ("L2", 2 << 20, 16),
        ("LLC", 36 << 20, 12),
    ]


def test_the_model_remembers_every_line_it_brought_in():
    model = one_level(64 * 64, 8, prefetch=True)
    for line in (0, 4, 5, 0):  # 0 brings 1, 4 brings 5
        model.access(line)
    assert model.filled == {0, 1, 4, 5}


def lookups(calls: int, lines: int, seed: int = 7) -> list[list]:
    """Calls that each read one line every call reads and three of `lines` others,
    uniformly at random: a hash table's bucket walk."""
    rng = random.Random(seed)
    table = 0x4000000
    return [
        [("L", 0x1000, 8, 0x108000)]
        + [("L", table + 64 * rng.randrange(lines), 8, 0x108010 + 4 * i) for i in range(3)]
        for _ in range(calls)
    ]


def trace_of(calls: list[list], total: int, chosen: str) -> Trace:
    trace = Trace("find", "prog", 0x108000, 64, calls, total, 0, 0, 0, 0, 0)
    trace.chosen = chosen  # type: ignore[assignment]
    return trace


def test_one_call_in_k_models_the_misses_of_every_call():
    geometry = parse_spec("line=64,L1d=16K:4,L2=128K:8,LLC=1M:16,prefetch=none")
    every = lookups(20000, 4000)
    exact = simulate(trace_of(every, len(every), "first"), geometry)["misses_per_call"]
    sampled = simulate(trace_of(every[::64], len(every), "fixed"), geometry)["misses_per_call"]
    # the LLC holds all 4,000 lines: only their first touches miss, 0.2 per call,
    # where the traced calls alone find three new lines each
    assert exact["LLC"] == pytest.approx(0.2, abs=0.01)
    for level in ("L1d", "L2", "LLC"):
        assert sampled[level] == pytest.approx(exact[level], rel=0.2)
    assert exact["L2"] > 1.0 and exact["L1d"] > exact["L2"]


def spatially_sampled(every: list[list], k: int) -> Trace:
    """1 call in k, with every call's accesses to 1 in k lines (and the lines below
    them), as fntrace records them."""
    trace = trace_of(every[::k], len(every), "fixed")
    trace.sample_every = k
    stream = [(address, size) for call in every for kind, address, size, _ in call if kind != "I"]
    trace.spatial = thinned(stream, 6, k)
    return trace


@pytest.mark.parametrize(("lines", "k"), [(3000, 16), (40000, 64)])
def test_a_spatial_sample_models_the_misses_of_the_large_levels(lines, k):
    geometry = parse_spec("line=64,L1d=16K:4,L2=128K:8,LLC=1M:16")
    every = lookups(40000, lines)
    exact = simulate(trace_of(every, len(every), "first"), geometry)["misses_per_call"]
    sampled = simulate(spatially_sampled(every, k), geometry)
    temporal = simulate(trace_of(every[::k], len(every), "fixed"), geometry)
    # 3,000 lines fit the LLC, not the L2; 40,000 fit neither
    assert exact["L2"] > 0.5 and (exact["LLC"] > 1.0) == (lines > 16384)
    for level in ("L1d", "L2", "LLC"):
        assert sampled["misses_per_call"][level] == pytest.approx(exact[level], rel=0.2)
    # the first level's misses are the traced calls' own; the others, shared out by them
    assert sampled["per_call"][0][0] == temporal["per_call"][0][0]
    per_call = sum(call[1] for call in sampled["per_call"]) / len(sampled["per_call"])
    assert per_call == pytest.approx(sampled["misses_per_call"]["L2"])
    by_source = sum(row["L2"] for row in sampled["by_source"].values())
    assert by_source == pytest.approx(per_call * len(sampled["per_call"]))


@pytest.mark.parametrize(("lines", "k"), [(3000, 16), (40000, 64)])
def test_a_spatial_sample_without_the_prefetcher_prefetches_nothing(lines, k):
    # prefetch=none: a miss of the line below a chosen one brought the chosen one in
    # all the same, so that a Verstable map's lookups (20,000 keys, 1 in 128 calls)
    # read L2 0.49 and LLC 0.26 misses per call against the exact 0.96 and 0.66
    geometry = parse_spec("line=64,L1d=16K:4,L2=128K:8,LLC=1M:16,prefetch=none")
    every = lookups(40000, lines)
    exact = simulate(trace_of(every, len(every), "first"), geometry)["misses_per_call"]
    sampled = simulate(spatially_sampled(every, k), geometry)["misses_per_call"]
    for level in ("L2", "LLC"):
        assert sampled[level] == pytest.approx(exact[level], rel=0.2)


def test_the_first_calls_are_modelled_access_by_access():
    geometry = parse_spec("line=64,L1d=16K:4,prefetch=none")
    calls = lookups(300, 50)
    per_call = simulate(trace_of(calls, len(calls), "first"), geometry)["per_call"]
    assert all(float(m).is_integer() for [m] in per_call)
    assert sum(m for [m] in per_call) <= 51  # the 51 lines miss once each, then fit


def test_sampled_calls_leave_room_for_the_neighbours_the_prefetcher_brings_in():
    geometry = parse_spec("line=64,L1d=16K:4,L2=128K:8,LLC=1M:16")
    rng = random.Random(3)
    # 4,000 objects at random places: each touched line's neighbour is one nobody reads
    places = [rng.randrange(1 << 18) * 128 for _ in range(4000)]
    every = [
        [("L", 0x1000, 8, 0x108000)]
        + [("L", 0x4000000 + rng.choice(places), 8, 0x108010 + 4 * i) for i in range(3)]
        for _ in range(20000)
    ]
    exact = simulate(trace_of(every, len(every), "first"), geometry)["misses_per_call"]
    sampled = simulate(trace_of(every[::64], len(every), "fixed"), geometry)["misses_per_call"]
    # the L2 holds 2,048 lines: half the objects' lines, a quarter with their neighbours
    assert exact["L2"] > 2.0
    for level in ("L1d", "L2", "LLC"):
        assert sampled[level] == pytest.approx(exact[level], rel=0.2)


def test_the_level_the_prefetcher_fills_first_evicts_its_prefetched_lines_first():
    model = CacheModel(parse_spec("line=64,L1d=128:2,L2=512:8,LLC=64K:16,prefetch=1"))
    touched = [16 * i for i in range(6)]  # each miss brings the next line too
    for line in touched:
        model.access(line)
    held = model.sets[1][0]  # the L2's one set of 8 ways
    # entering the top, the 6 lines and 6 neighbours would leave 4 of the lines there
    assert set(touched) <= set(held)
    assert set(held) - set(touched) == {65, 81}  # the last neighbours, low in the order
    assert all(line + 1 in model.sets[2][(line + 1) % 64] for line in touched)  # LLC: all


def test_one_call_in_k_counts_the_lines_a_touch_of_the_line_below_brought_in():
    geometry = parse_spec("line=64,L1d=16K:4,L2=1M:8,LLC=8M:16")
    rng = random.Random(5)
    # an array of 3,000 lines that fits the L2, one line of it per call at random:
    # about half the lines come in early, prefetched by a touch of the line below
    every = [
        [("L", 0x1000, 8, 0x108000), ("L", 0x4000000 + 64 * rng.randrange(3000), 8, 0x108010)]
        for _ in range(20000)
    ]
    exact = simulate(trace_of(every, len(every), "first"), geometry)["misses_per_call"]
    sampled = simulate(trace_of(every[::64], len(every), "fixed"), geometry)["misses_per_call"]
    assert exact["L2"] == pytest.approx(3000 / 2 / 20000, rel=0.1)
    for level in ("L1d", "L2", "LLC"):
        assert sampled[level] == pytest.approx(exact[level], rel=0.2)


@pytest.mark.parametrize("spatial", [False, True])
def test_the_first_touches_of_the_lines_are_counted_apart(spatial):
    """The model starts empty at the first traced call: 4,000 lines an LLC holds miss
    it once each, 0.2 a call over 20,000 calls, where callgrind, whose caches are
    warm from the fill that wrote them, counts none. The first touches are said, so
    that `LLC 0.20` is not read as a working set the LLC cannot hold."""
    geometry = parse_spec("line=64,L1d=16K:4,L2=128K:8,LLC=1M:16,prefetch=none")
    every = lookups(20000, 4000)
    trace = spatially_sampled(every, 16) if spatial else trace_of(every, len(every), "first")
    sim = simulate(trace, geometry)
    assert sim["misses_per_call"]["LLC"] == pytest.approx(0.2, rel=0.2)
    assert sim["first_touches_per_call"] == pytest.approx(sim["misses_per_call"]["LLC"], rel=0.05)
    assert sim["misses_per_call"]["L2"] > 3 * sim["first_touches_per_call"]


def test_the_model_counts_a_lines_first_touch_once_and_not_a_prefetched_one():
    model = one_level(64 * 64, 8, prefetch=True)
    for line in (0, 0, 1, 4, 4):  # 1 was prefetched by 0's miss
        model.access(line)
    assert model.first_touches == 2


def test_an_access_that_crosses_a_line_boundary_and_misses_both_lines_is_counted_apart():
    """abseil's 16 control bytes, loaded unaligned at a random start: over an array
    no level holds, a load that crosses a line misses both lines, which the model
    counts as two misses and cachegrind as one."""
    geometry = parse_spec("line=64,L1d=4K:8,L2=32K:8,prefetch=none")
    rng = random.Random(3)
    starts = [0x4000000 + 64 * rng.randrange(1 << 16) + rng.choice((8, 56)) for _ in range(4000)]
    calls = [[("L", start, 16, 0x108000)] for start in starts]
    sim = simulate(trace_of(calls, len(calls), "first"), geometry)
    crossing = sum(start % 64 == 56 for start in starts) / len(starts)
    for level in ("L1d", "L2"):
        assert sim["split_misses_per_call"][level] == pytest.approx(crossing, rel=0.05)
        assert sim["misses_per_call"][level] == pytest.approx(1 + crossing, rel=0.05)
