"""Deltas of cumulative profiles (collector/deltas.py)."""

from __future__ import annotations

from perfsleuth.collector.deltas import Deltas
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Frame, ProfileBuilder

MAIN, ALLOC, PARSE = Frame("main"), Frame("alloc"), Frame("parse")


def cumulative(host: str, alloc: int, parse: int) -> Window:
    b = ProfileBuilder("samples", {"cumulative": True})
    b.add([ALLOC, MAIN], alloc, count=alloc)
    b.add([PARSE, MAIN], parse, count=parse)
    return Window(
        id=f"{host}-{alloc}-{parse}",
        start=1.7e9,
        end=1.7e9 + 10,
        profile=b.build(),
        labels={"host": host},
        type="alloc_space",
    )


def by_leaf(window: Window) -> dict[str, float]:
    p = window.profile
    return {p.frames[stack[0]].function: w for stack, w, _c, _t, _s in p.rows()}


def test_the_first_push_is_a_baseline_then_differences_per_stack_and_series() -> None:
    deltas = Deltas()
    assert deltas.apply(cumulative("a", 100, 10)) is None
    assert deltas.apply(cumulative("b", 5, 5)) is None  # another series: its own baseline
    second = deltas.apply(cumulative("a", 150, 10))
    assert second is not None and by_leaf(second) == {"alloc": 50}  # parse did nothing
    restarted = deltas.apply(cumulative("a", 20, 30))  # alloc went down: a new process
    assert restarted is not None and by_leaf(restarted) == {"alloc": 20, "parse": 20}


def test_series_past_the_bound_start_over() -> None:
    deltas = Deltas(max_series=1)
    deltas.apply(cumulative("a", 1, 1))
    deltas.apply(cumulative("b", 1, 1))
    assert deltas.apply(cumulative("a", 2, 2)) is None  # a was forgotten: a baseline again
