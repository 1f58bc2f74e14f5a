"""Recorders report their progress to the Progress they are given, with real tools.

Cache mode counts the calls it keeps out of --max-calls (valgrind's lackey really
runs examples/bin/conntable); count mode names its phases (callgrind really runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_progress import Recorded

from perfsleuth.collect.cpu_cache import record_cache
from perfsleuth.collect.options import RecordOptions
from perfsleuth.collect.valgrind import record_count

pytestmark = pytest.mark.integration


def test_cache_mode_counts_the_calls_it_keeps(examples_built: Path, tmp_path: Path) -> None:
    progress = Recorded()
    options = RecordOptions(mode="cache", function="handle_packet", max_calls=40, progress=progress)
    record_cache(options, [str(examples_built / "conntable"), "500", "300"], tmp_path)
    assert progress.phases == [("tracing the calls of handle_packet", 40)]
    assert progress.done == 40


def test_count_mode_names_its_phases(examples_built: Path, tmp_path: Path) -> None:
    progress = Recorded()
    record_count(
        RecordOptions(mode="count", progress=progress), [str(examples_built / "keys")], tmp_path
    )
    assert [name for name, _total in progress.phases] == [
        "counting the instructions of " + str(examples_built / "keys") + " under callgrind",
        "reading callgrind's counts",
    ]
