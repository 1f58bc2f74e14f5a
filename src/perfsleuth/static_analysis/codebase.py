"""The analysis of a whole codebase's translation units: each one's report from the
on-disk cache when its files are unchanged, else from a worker process — one per
core available — within a bound of CPU time, not wall time (a busy machine makes a
unit slower, never skipped).

The bound is the worker's own CPU time (libclang's parse and the source patterns,
cpu_limits.cpu_limit); the compilers it starts have theirs (compiler_remarks).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from .cpu_limits import OverCpuTime, cpu_limit
from .source import TranslationUnit
from .unit_analysis import analyse_unit
from .unit_cache import UnitCache
from .unit_report import UnitReport

UNIT_CPU_S = 120  # CPU seconds one unit's parse and source patterns may take


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def analyse_codebase(
    units: list[TranslationUnit],
    all_remarks: bool = False,
    cache: UnitCache | None = None,
    done: Callable[[], None] = lambda: None,
) -> list[UnitReport]:
    """A report per unit, in the order given; `done` is called as each one is ready."""
    reports: dict[int, UnitReport] = {}
    todo = []
    for n, unit in enumerate(units):
        hit = cache.get(unit, all_remarks) if cache is not None else None
        if hit is None:
            todo.append(n)
        else:
            reports[n] = hit
            done()
    crashed: set[int] = set()
    while todo:
        for n, report in _analyse_in_workers(units, todo, all_remarks):
            if report is None and n not in crashed:
                crashed.add(n)  # perhaps only in the same worker as the unit that crashed it
                continue
            reports[n] = report or UnitReport(units[n], error="libclang crashed on it")
            if cache is not None:
                cache.put(reports[n], all_remarks)
            done()
        todo = [n for n in todo if n not in reports]
    return [reports[n] for n in range(len(units))]


def _analyse_in_workers(
    units: list[TranslationUnit], todo: list[int], all_remarks: bool
) -> Iterator[tuple[int, UnitReport | None]]:
    """(index, report) as each is ready; None for the units whose worker died. One
    unit (an editor's lint of the file at hand) is analysed in this process: a
    worker would cost more to start than a small unit's analysis."""
    if len(todo) == 1 and threading.current_thread() is threading.main_thread():
        yield todo[0], analyse_within_limit(units[todo[0]], all_remarks)
        return
    context = multiprocessing.get_context("spawn")
    workers = min(len(todo), available_cores())
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(analyse_within_limit, units[n], all_remarks): n for n in todo}
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except BrokenProcessPool:
                yield futures[future], None


def analyse_within_limit(unit: TranslationUnit, all_remarks: bool) -> UnitReport:
    """analyse_unit in a worker, stopped past UNIT_CPU_S of its CPU time."""
    try:
        with cpu_limit(UNIT_CPU_S):
            return analyse_unit(unit, None, all_remarks)
    except OverCpuTime:
        error = f"its analysis used over {UNIT_CPU_S} CPU-s (the bound of one unit's analysis)"
        return UnitReport(unit, too_long=True, error=error)
