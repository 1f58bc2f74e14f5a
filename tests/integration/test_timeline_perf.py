"""The time order of a real perf recording: the native reader's Timeline against
`perf script` of the same perf.data, sample for sample."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.formats import perf_data

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def recording(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """prodcons (a producer and consumer threads), recorded with call graphs and times."""
    out = tmp_path_factory.mktemp("timeline") / "perf.data"
    subprocess.run(
        ["perf", "record", "-q", "-F", "2000", "-g", "-o", str(out), "--",
         str(examples_built / "prodcons"), "200000"],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def perf_script_samples(data: Path) -> list[tuple[int, int]]:
    """(tid, time in ns) of every sample, in the order perf script prints them."""
    text = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "tid,time"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    samples = []
    for line in text.splitlines():
        tid, time = line.split()
        seconds, _, fraction = time.rstrip(":").partition(".")
        samples.append((int(tid), int(seconds) * 10**9 + int(fraction.ljust(9, "0"))))
    return samples


def test_the_timeline_has_every_sample_in_perfs_order(recording: Path) -> None:
    if not perf_data.native_available():
        pytest.skip("the native reader is not built (make native)")
    profile = perf_data.read(recording)
    timeline = profile.timeline
    assert timeline is not None
    expected = perf_script_samples(recording)
    assert timeline.samples == profile.num_samples == len(expected)
    # every sample, expanded from the runs, on the thread perf says, in perf's order;
    # perf script prints microseconds, so each run's first time is checked to 1 µs
    tids = [profile.threads[t].tid for t in timeline.thread]
    expanded = [tid for tid, n in zip(tids, timeline.count, strict=True) for _ in range(n)]
    assert expanded == [tid for tid, _ in expected]
    firsts = [sum(timeline.count[:i]) for i in range(len(timeline))]
    for first, time in zip(firsts, timeline.time_ns, strict=True):
        assert abs(time - expected[first][1]) < 1000
    assert len({t.tid for t in profile.threads}) >= 2  # the producer and the consumer


def test_each_run_is_on_a_stack_of_its_thread(recording: Path) -> None:
    if not perf_data.native_available():
        pytest.skip("the native reader is not built (make native)")
    profile = perf_data.read(recording)
    assert profile.timeline is not None
    rows = {(sid, t) for sid, _, _, t, _ in profile.columns()}
    runs = zip(profile.timeline.stack, profile.timeline.thread, strict=True)
    assert all((sid, thread) in rows for sid, thread in runs)
    counted: dict[tuple[int, int], int] = {}
    for sid, thread, n in zip(
        profile.timeline.stack, profile.timeline.thread, profile.timeline.count, strict=True
    ):
        counted[(sid, thread)] = counted.get((sid, thread), 0) + n
    assert counted == {(sid, t): c for sid, _, c, t, _ in profile.columns()}
