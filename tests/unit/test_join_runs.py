"""native/src/timeline.rs join_runs: a reading's runs of rows re-keyed by a profile's
stacks and threads, as bytes for array.frombytes."""

from __future__ import annotations

from array import array

import perfsleuth_native
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

Runs = list[tuple[int, int, int]]  # (row, count, time) per run


def _join(runs: Runs, stack_of_row: list[int], thread_of_row: list[int]) -> list[tuple]:
    columns = zip(*runs, strict=True)
    rows, counts, times = (array(code, column) for code, column in zip("IIQ", columns, strict=True))
    joined = perfsleuth_native.join_runs(
        rows.tobytes(), counts.tobytes(), times.tobytes(), stack_of_row, thread_of_row
    )
    columns = [array(code) for code in "iiIQ"]
    for column, data in zip(columns, joined, strict=True):
        column.frombytes(data)
    return [tuple(run) for run in zip(*columns, strict=True)]


def _python_join(runs: Runs, stack_of_row: list[int], thread_of_row: list[int]) -> list[tuple]:
    out: list[list[int]] = []
    for row, count, time in runs:
        stack, thread = stack_of_row[row], thread_of_row[row]
        if stack < 0:
            continue
        if out and out[-1][:2] == [stack, thread]:
            out[-1][2] += count
        else:
            out.append([stack, thread, count, time])
    return [tuple(run) for run in out]


def test_runs_on_one_stack_and_thread_join_and_other_events_drop_out() -> None:
    # rows 0 and 2 are one profile stack; row 1 is another event's
    runs = [(0, 3, 100), (1, 5, 200), (2, 2, 300), (0, 1, 400), (3, 4, 500)]
    got = _join(runs, [7, -1, 7, 8], [0, -1, 0, 1])
    assert got == [(7, 0, 6, 100), (8, 1, 4, 500)]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_join_is_the_python_loop(data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, 6))
    stack_of_row = data.draw(st.lists(st.integers(-1, 3), min_size=rows, max_size=rows))
    thread_of_row = data.draw(st.lists(st.integers(-1, 2), min_size=rows, max_size=rows))
    run = st.tuples(st.integers(0, rows - 1), st.integers(1, 1000), st.integers(0, 2**63))
    runs = data.draw(st.lists(run, min_size=1, max_size=40))
    assert _join(runs, stack_of_row, thread_of_row) == _python_join(
        runs, stack_of_row, thread_of_row
    )


def test_bad_columns_are_errors() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        perfsleuth_native.join_runs(b"\0" * 4, b"\0" * 4, b"\0" * 4, [0], [0])
    with pytest.raises(ValueError, match="past the rows"):
        _join([(2, 1, 1)], [0], [0])
