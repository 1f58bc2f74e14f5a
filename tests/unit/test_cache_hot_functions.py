"""What `run --mode cache` traces without --function: the functions that carry the
accesses (collect/cache.hot_functions), on profiles of examples/bin/conntable."""

from pathlib import Path

import pytest

from perfsleuth.collect.cpu_cache import hot_functions
from perfsleuth.model.profile import Frame, ProfileBuilder


@pytest.fixture
def conntable(examples_built: Path) -> str:
    return str(examples_built / "conntable")


def profile(rows: list[tuple[list[str], float]]):
    """Leaf-first stacks of function names: conntable's unless they are memset's."""
    builder = ProfileBuilder(unit="ns")
    for names, weight in rows:
        frames = [Frame(n, dso="libc.so.6" if n == "memset" else "conntable") for n in names]
        builder.add(frames, weight)
    return builder.build()


def test_main_is_never_traced_even_when_hottest(conntable):
    rows = [(["main"], 60.0), (["handle_packet", "main"], 40.0)]
    assert hot_functions(profile(rows), conntable) == ["handle_packet"]


def test_library_time_counts_for_the_function_that_called_it(conntable):
    rows = [(["memset", "handle_packet", "main"], 30.0), (["main"], 70.0)]
    assert hot_functions(profile(rows), conntable) == ["handle_packet"]


def test_a_function_taking_a_struct_pointer_goes_before_a_hotter_one_that_does_not(conntable):
    rows = [(["open_connections", "main"], 50.0), (["handle_packet", "main"], 20.0)]
    assert hot_functions(profile(rows), conntable) == ["handle_packet"]


def test_a_loop_around_its_own_callee_is_not_traced(conntable):
    # run_packets takes a struct pointer too, but handle_packet carries its time
    rows = [(["handle_packet", "run_packets", "main"], 60.0), (["run_packets", "main"], 40.0)]
    assert hot_functions(profile(rows), conntable) == ["handle_packet"]
