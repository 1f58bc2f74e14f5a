"""The set-associative LRU model with its next-line prefetcher, and geometry parsing."""

import pytest

from perfsleuth.cpu_cache_projections.model import (
    CacheModel,
    Geometry,
    Level,
    machine_geometry,
    parse_spec,
)
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
