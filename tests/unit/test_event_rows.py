"""native/src/event_rows.rs: one event's rows of a perf.data reading mapped onto a
profile, against the Python loops it replaced (formats/perf_data.py before it), which
gave the order a run's frame and stack ids follow."""

from __future__ import annotations

from typing import Any

import perfsleuth_native
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

INTS = st.integers(min_value=0, max_value=2**32 - 1)


def _rows(stacks: list[tuple[int, ...]], rows: list[tuple[int, ...]], event: int) -> Any:
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
    return perfsleuth_native.EventRows(stacks, *map(list, columns), event)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 5000), INTS), max_size=300))
def test_a_stacks_frames_come_in_the_order_of_pythons_set(stack: list[int]) -> None:
    frames, samples = _rows([tuple(stack)], [(0, 0, 0, 1, 3)], 0).frame_samples()
    assert frames == list(set(stack))
    assert samples == [3] * len(frames)


def _python_frame_samples(stacks: list, rows: list, event: int) -> dict[int, int]:
    samples: dict[int, int] = {}
    for sid, _, ev, _, count in rows:
        if ev == event:
            for fid in set(stacks[sid]):
                samples[fid] = samples.get(fid, 0) + count
    return samples


def _python_leaf_weights(stacks: list, rows: list, event: int, by_count: bool) -> dict:
    per_frame: dict[int, float] = {}
    for sid, _, ev, period, count in rows:
        if ev == event and stacks[sid]:
            leaf = stacks[sid][0]
            per_frame[leaf] = per_frame.get(leaf, 0.0) + (count if by_count else period)
    return per_frame


def _python_expand(stacks: list, rows: list, event: int, chains: dict, threads: list) -> tuple:
    """add_samples' loop, with ProfileBuilder's interning of stacks and rows."""
    stack_ids: dict[tuple[int, ...], int] = {}
    of_native: dict[int, int] = {}
    sums: dict[tuple[int, int], list] = {}
    placed = []
    for sid, ti, ev, period, count in rows:
        if ev != event:
            placed.append((-1, -1))
            continue
        if sid not in of_native:
            ids = tuple(i for fid in stacks[sid] for i in chains[fid])
            of_native[sid] = stack_ids.setdefault(ids, len(stack_ids))
        key = (of_native[sid], threads[ti])
        weight = float(count) if event == 0 else float(period)
        if key in sums:
            sums[key][0] += weight
            sums[key][1] += count
        else:
            sums[key] = [weight, count]
        placed.append(key)
    return list(stack_ids), placed, sums


@st.composite
def readings(draw: st.DrawFn) -> tuple[list, list, dict, list]:
    frames = draw(st.integers(1, 60))
    stacks = draw(
        st.lists(
            st.lists(st.integers(0, frames - 1), max_size=12).map(tuple), min_size=1, max_size=30
        )
    )
    threads = draw(st.lists(st.integers(-1, 5), min_size=1, max_size=4))
    row = st.tuples(
        st.integers(0, len(stacks) - 1),
        st.integers(0, len(threads) - 1),
        st.integers(0, 1),
        st.integers(1, 10**12),
        st.integers(1, 1000),
    )
    rows = draw(st.lists(row, max_size=60))
    # two native frames may symbolize to the same profile frames
    chains = {f: draw(st.lists(st.integers(0, 20), min_size=1, max_size=3)) for f in range(frames)}
    return stacks, rows, chains, threads


@settings(max_examples=200, deadline=None)
@given(readings(), st.integers(0, 1))
def test_the_mapping_is_the_python_loops(reading: tuple, event: int) -> None:
    stacks, rows, chains, threads = reading
    native = _rows(stacks, rows, event)
    assert dict(zip(*native.frame_samples(), strict=True)) == _python_frame_samples(
        stacks, rows, event
    )
    assert list(zip(*native.frame_samples(), strict=True)) == list(
        _python_frame_samples(stacks, rows, event).items()
    )
    for by_count in (True, False):
        leaves = list(zip(*native.leaf_weights(by_count), strict=True))
        assert leaves == list(_python_leaf_weights(stacks, rows, event, by_count).items())
    # event 0 weighs by count, event 1 by period (as _python_expand does)
    expanded, row_stack, row_thread, sums = native.expand(chains, threads, event == 0)
    want_stacks, want_placed, want_sums = _python_expand(stacks, rows, event, chains, threads)
    assert expanded == want_stacks
    assert list(zip(row_stack, row_thread, strict=True)) == want_placed
    got = {(s, t): [w, c] for s, t, w, c in zip(*sums, strict=True)}
    assert list(got.items()) == list(want_sums.items())


def test_a_stack_is_counted_once_per_sample_and_other_events_are_left_out() -> None:
    # stack 0 holds frame 7 twice (recursion); row 2 is another event's
    native = _rows([(7, 3, 7), (3,)], [(0, 0, 0, 10, 2), (1, 0, 0, 5, 1), (1, 0, 1, 5, 9)], 0)
    frames, samples = native.frame_samples()
    assert dict(zip(frames, samples, strict=True)) == {7: 2, 3: 3}
    assert native.leaf_weights(False) == ([7, 3], [10.0, 5.0])
    expanded, row_stack, _, sums = native.expand({7: [0], 3: [1, 2]}, [4], False)
    assert expanded == [(0, 1, 2, 0), (1, 2)]
    assert row_stack == [0, 1, -1]
    assert sums == ([0, 1], [4, 4], [10.0, 5.0], [2, 1])


def test_two_native_stacks_of_one_profile_stack_are_summed_as_one_row() -> None:
    # frames 1 and 2: two addresses of one line, one profile frame
    native = _rows([(1,), (2,)], [(0, 0, 0, 4, 1), (1, 0, 0, 6, 2)], 0)
    expanded, row_stack, _, sums = native.expand({1: [0], 2: [0]}, [0], False)
    assert expanded == [(0,)]
    assert row_stack == [0, 0]
    assert sums == ([0], [0], [10.0], [3])


def test_bad_columns_and_missing_chains_are_errors() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        perfsleuth_native.EventRows([(1,)], [0], [0, 0], [0], [1], [1], 0)
    with pytest.raises(ValueError, match="past the stacks"):
        _rows([(1,)], [(1, 0, 0, 1, 1)], 0)
    with pytest.raises(ValueError, match="no chain"):
        _rows([(1,)], [(0, 0, 0, 1, 1)], 0).expand({}, [0], True)
    with pytest.raises(ValueError, match="past the threads"):
        _rows([(1,)], [(0, 3, 0, 1, 1)], 0).expand({1: [0]}, [0], True)
