"""The samples' part of a command's CPU time: short processes the per-task timer misses."""

from __future__ import annotations

from perfsleuth.collect.sampling_gap import META_KEY, PER_TASK_REASON, children_cpu_s, gap_warning
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
