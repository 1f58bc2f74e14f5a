"""The samples' part of a command's CPU time: short processes the per-task timer misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.collect import perf
from perfsleuth.collect.options import RecordOptions
from perfsleuth.collect.sampling_gap import (
    META_KEY,
    PER_TASK_REASON,
    children_cpu_s,
    empty_warning,
    gap_warning,
)
from perfsleuth.errors import NoSamples
from perfsleuth.model.profile import Frame, ProfileBuilder


def profile_of(seconds: float, unit: str = "ns"):
    builder = ProfileBuilder(unit=unit)
    weight = seconds * 1e9 if unit == "ns" else seconds * 999
    builder.add([Frame("main", "app")], weight, count=int(seconds * 999))
    return builder.build()


def test_samples_that_miss_most_of_the_cpu_time_say_why_and_what_to_do() -> None:
    """spawn_per_item at 999 Hz: 0.03 s sampled of 0.75 s used."""
    said = gap_warning(profile_of(0.03), {META_KEY: 0.75, "freq": 999})
    assert "0.03 s of the 0.75 s" in said and "1.00 ms at 999 Hz" in said
    assert "--freq 3996" in said


def test_samples_that_cover_the_cpu_time_say_nothing() -> None:
    assert gap_warning(profile_of(0.7), {META_KEY: 0.75, "freq": 999}) == ""
    assert gap_warning(profile_of(0.7, unit="samples"), {META_KEY: 0.75, "freq": 999}) == ""


def test_a_short_or_unmeasured_run_says_nothing() -> None:
    assert gap_warning(profile_of(0.01), {META_KEY: 0.1, "freq": 999}) == ""
    assert gap_warning(profile_of(0.01), {"freq": 999}) == ""


def test_at_the_highest_rate_it_suggests_counting() -> None:
    said = gap_warning(profile_of(0.1), {META_KEY: 1.0, "freq": 20000})
    assert "--mode count" in said


def test_the_childrens_cpu_time_is_their_user_and_system_time(monkeypatch) -> None:
    import resource
    from types import SimpleNamespace

    used = SimpleNamespace(ru_utime=1.25, ru_stime=0.5)
    asked = []
    monkeypatch.setattr(resource, "getrusage", lambda who: asked.append(who) or used)
    assert children_cpu_s() == 1.75 and asked == [resource.RUSAGE_CHILDREN]


def test_a_run_sampled_per_task_says_why_it_was() -> None:
    meta = {META_KEY: 0.75, "freq": 999, PER_TASK_REASON: "no cgroup2 hierarchy is mounted"}
    said = gap_warning(profile_of(0.03), meta)
    assert "(sampled per task: no cgroup2 hierarchy is mounted; per CPU" in said
    assert "CAP_PERFMON" in said and "a cgroup folder perfsleuth may write" in said


def test_no_sample_of_many_periods_of_cpu_time_is_the_gap_not_a_short_run() -> None:
    meta = {META_KEY: 0.75, "freq": 999, PER_TASK_REASON: "cannot make a cgroup in /sys/fs/cgroup"}
    said = empty_warning(meta)
    assert "perf kept no sample of the 0.75 s of CPU time" in said
    assert "(sampled per task: cannot make a cgroup in /sys/fs/cgroup; per CPU" in said
    assert "fewer, longer-running processes" in said
    # `true` used a millisecond: one period at 999 Hz, too brief to be sampled
    assert empty_warning({META_KEY: 0.001, "freq": 999}) == ""
    assert empty_warning({"freq": 999}) == ""


# `perf record -q -F 999 --call-graph dwarf -- /bin/true`: a real recording with no sample
EMPTY = Path(__file__).parent.parent / "fixtures" / "no_samples.perf.data"


def _record_kept_nothing(monkeypatch, tmp_path: Path, cpu_s: float | None, pid: int | None = None):
    data = tmp_path / "perf.data"
    data.write_bytes(EMPTY.read_bytes())
    run = perf.PerfRun(data, 0, 1.0, "dwarf", 999, cpu_s=cpu_s, per_task_reason="read-only")
    monkeypatch.setattr(perf, "record", lambda *args, **kwargs: run)
    with pytest.raises(NoSamples) as refused:
        perf.record_cpu(RecordOptions(pid=pid), [] if pid else ["spawn_per_item"], tmp_path)
    return str(refused.value)


def test_a_recording_of_many_short_processes_that_kept_no_sample_says_the_gap(
    monkeypatch, tmp_path
) -> None:
    """spawn_per_item sampled per task: 1,000 children of 0.6 ms, and in one CI
    rehearsal's run not one sample kept of its 0.75 s of CPU time."""
    said = _record_kept_nothing(monkeypatch, tmp_path, 0.75)
    assert "perf kept no sample of the 0.75 s of CPU time" in said, said
    assert "(sampled per task: read-only; per CPU" in said and "ran too briefly" not in said


def test_a_recording_of_a_brief_command_that_kept_no_sample_says_it_ran_too_briefly(
    monkeypatch, tmp_path
) -> None:
    said = _record_kept_nothing(monkeypatch, tmp_path, 0.001)
    assert "ran too briefly" in said and "CPU time" not in said, said


def test_a_process_attached_to_that_kept_no_sample_is_said_to_be_idle(
    monkeypatch, tmp_path
) -> None:
    """--pid of a server waiting for requests: its CPU time is not ours to measure, and
    "ran too briefly, re-record" named neither what happened nor what to do."""
    said = _record_kept_nothing(monkeypatch, tmp_path, None, pid=4242)
    assert "pid 4242 was not seen on a CPU in the 1.0 s recorded" in said, said
    assert "--mode wall --pid 4242" in said and "ran too briefly" not in said
