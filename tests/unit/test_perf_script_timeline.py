"""`perf script` text keeps its samples' time order (formats/perf_script.py builds
the run's Timeline), checked on this machine's captured perf output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfsleuth.formats import perf_script
from perfsleuth.model.profile import Profile

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "perf_script"
TIME = re.compile(r"\s(\d+)\.(\d{6}):")


def sample_times(path: Path) -> list[int]:
    """The time of every sample header, in ns, in the file's order."""
    times = []
    for line in path.read_text().splitlines():
        match = TIME.search(line)
        if match and not line.startswith("\t"):
            times.append(int(match[1]) * 10**9 + int(match[2]) * 1000)
    return times


def expanded(profile: Profile) -> list[tuple[int, int]]:
    timeline = profile.timeline
    assert timeline is not None
    return [
        (sid, thread)
        for sid, thread, n in zip(timeline.stack, timeline.thread, timeline.count, strict=True)
        for _ in range(n)
    ]


@pytest.mark.parametrize("fixture", ["fp.txt", "fields.txt", "nocallchain.txt"])
def test_every_sample_in_the_files_order(fixture: str) -> None:
    path = FIXTURES / fixture
    profile = perf_script.read(path, resymbolize=False)
    timeline = profile.timeline
    assert timeline is not None
    times = sample_times(path)
    assert timeline.samples == profile.num_samples == len(times)
    starts = [sum(timeline.count[:i]) for i in range(len(timeline))]
    assert list(timeline.time_ns) == [times[i] for i in starts]
    # each run's samples are on the stack and thread of a row holding them all
    rows = {(sid, t): c for sid, _, c, t, _ in profile.columns()}
    for key in set(expanded(profile)):
        assert expanded(profile).count(key) == rows[key]


HEAD = "app 7/{tid} {time}: 1 cpu-clock:\n\t1 {fn}+0x1 (/bin/app)\n\t2 main+0x2 (/bin/app)\n\n"


def test_samples_out_of_order_are_put_in_time_order() -> None:
    text = "".join(
        HEAD.format(tid=tid, time=time, fn=fn)
        for tid, time, fn in [(7, "5.000003", "b"), (7, "5.000001", "a"), (8, "5.000002", "a")]
    )
    profile = perf_script.read_text(text, resymbolize=False)
    leaf = [profile.frames[profile.stacks[sid][0]].function for sid, _ in expanded(profile)]
    tids = [profile.threads[t].tid for _, t in expanded(profile)]
    assert (leaf, tids) == (["a", "a", "b"], [7, 8, 7])
    assert profile.timeline is not None
    assert list(profile.timeline.time_ns) == [5_000_001_000, 5_000_002_000, 5_000_003_000]


def test_output_without_times_has_no_time_order() -> None:
    text = (
        "app 7/7 1 cpu-clock:\n\t1 a+0x1 (/bin/app)\n\napp 7/7 1 cpu-clock:\n\t1 b+0x1 (/bin/app)\n"
    )
    profile = perf_script.read_text(text, resymbolize=False)
    assert profile.num_samples == 2
    assert profile.timeline is None
