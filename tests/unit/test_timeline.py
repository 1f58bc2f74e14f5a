"""The Timeline document (model/timeline.py): samples in time order, run-length
encoded, kept with the run by the store and read back as it was written."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import pytest

from perfsleuth.model import documents
from perfsleuth.model import timeline as timeline_module
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.model.timeline import Timeline
from perfsleuth.store.runs import Store


def test_samples_in_a_row_on_one_stack_and_thread_are_one_run() -> None:
    timeline = Timeline()
    for stack, thread, time in [(0, 0, 10), (0, 0, 20), (1, 0, 30), (1, 1, 40), (1, 1, 50)]:
        timeline.add(stack, thread, 1, time)
    timeline.add(1, 1, 3, 60)
    assert list(timeline.stack) == [0, 1, 1]
    assert list(timeline.thread) == [0, 0, 1]
    assert list(timeline.count) == [2, 1, 5]
    assert list(timeline.time_ns) == [10, 30, 40]  # each run keeps its first sample's time
    assert len(timeline) == 3 and timeline.samples == 8


def test_the_document_reads_back_exactly_at_its_version() -> None:
    timeline = Timeline()
    for i in range(5000):
        timeline.add(i % 7, i % 3 - 1, 1 + i % 2, 2**40 + 1000 * i)
    stored = documents.dump(timeline)
    assert stored["version"] == Timeline.VERSION and stored["runs"] == 5000
    back = documents.load(Timeline, stored)
    assert back == timeline


def test_columns_are_written_by_isa_l_in_zlib_s_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """ISA-L's deflate writes the columns (model/timeline.deflate), the zlib module reads
    them: a store written with it reads back with or without it, as one written by zlib."""
    from isal import isal_zlib

    assert timeline_module.deflate() is isal_zlib
    timeline = Timeline()
    for i in range(5000):
        timeline.add(i % 7, i % 3 - 1, 1, 2**40 + 1000 * i)
    stored = documents.dump(timeline)
    time_ns = zlib.decompress(base64.b64decode(stored["time_ns"]))
    assert time_ns == timeline.time_ns.tobytes()
    monkeypatch.setattr(timeline_module, "deflate", lambda: zlib)
    by_zlib = documents.dump(timeline)
    assert documents.load(Timeline, by_zlib) == documents.load(Timeline, stored) == timeline


def test_columns_of_different_lengths_are_refused() -> None:
    stored = documents.dump(Timeline())
    other = Timeline()
    other.add(0, 0, 1, 5)
    stored["stack"] = documents.dump(other)["stack"]
    with pytest.raises(ValueError, match="different lengths"):
        documents.load(Timeline, stored)


def test_the_store_keeps_a_profiles_timeline_with_its_run(tmp_path: Path) -> None:
    builder = ProfileBuilder(unit="samples")
    builder.add([Frame("work"), Frame("main")], 3, count=3, thread=Thread(7))
    builder.add([Frame("main")], 1, thread=Thread(7))
    profile = builder.build()
    profile.timeline = Timeline()
    for stack, time in [(0, 100), (1, 200), (0, 300), (0, 400)]:
        profile.timeline.add(stack, 0, 1, time)
    store = Store(tmp_path / "store")
    with_times = store.add_run(RunInfo(command="app"), Recording(profile))
    profile.timeline = None
    without = store.add_run(RunInfo(command="app"), Recording(profile))
    kept = store.documents(with_times.id, Timeline.KIND)
    assert list(kept) == [Timeline.NAME]
    assert list(kept[Timeline.NAME].stack) == [0, 1, 0]
    assert list(kept[Timeline.NAME].count) == [1, 1, 2]
    assert store.documents(without.id, Timeline.KIND) == {}
