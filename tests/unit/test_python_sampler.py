"""The agent's Python sampling: which processes are CPython, and how py-spy's stacks
replace perf's samples of a process in a window without counting it twice."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from perfsleuth.agent.python_sampler import (
    PythonSampler,
    RunStacks,
    apportion,
    is_cpython,
    with_python_stacks,
)
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread

EVAL = Frame("_PyEval_EvalFrameDefault", dso="libpython3.11.so.1.0")
WORK = Frame("work", dso="hotspots")
SERIALIZE = Frame("serialize", dso="[python:app]", file="/srv/app.py", line=30)
DUMPS = Frame("dumps", dso="[python:json]", file="/usr/lib/python3.11/json/__init__.py", line=231)
PARSE = Frame("parse", dso="[python:app]", file="/srv/app.py", line=34)


def perf_window() -> Profile:
    """pid 10 a Python service (two threads), pid 20 a native program; ns weights."""
    b = ProfileBuilder(unit="ns")
    b.add([EVAL], 7e8, count=7, thread=Thread(10, 10, "api"))
    b.add([EVAL], 3e8, count=3, thread=Thread(11, 10, "api-worker"))
    b.add([WORK], 5e8, count=5, thread=Thread(20, 20, "hotspots"))
    return b.build()


def spy_run() -> Profile:
    """py-spy's stacks of pid 10 (it counts differently from perf: 30 samples)."""
    b = ProfileBuilder()
    b.add([DUMPS, SERIALIZE], 20, count=20, thread=Thread(10, 0, "MainThread"))
    b.add([PARSE], 10, count=10, thread=Thread(11, 0, "Thread-1"))
    return b.build()


def by_process(profile: Profile) -> dict[int, tuple[int, float]]:
    out: dict[int, tuple[int, float]] = {}
    for _, w, c, t, _ in profile.rows():
        count, weight = out.get(profile.threads[t].pid, (0, 0.0))
        out[profile.threads[t].pid] = (count + c, weight + w)
    return out


def test_python_stacks_replace_perf_samples_of_that_process_and_keep_its_cpu_time() -> None:
    merged = with_python_stacks(perf_window(), {10: spy_run()})
    assert by_process(merged) == {10: (10, 1e9), 20: (5, 5e8)}
    leaves = {merged.frames[stack[0]].function for stack, *_ in merged.rows()}
    assert leaves == {"dumps", "parse", "work"}  # no _PyEval_EvalFrameDefault left
    rows = {
        merged.frames[stack[0]].function: (c, merged.threads[t])
        for stack, _, c, t, _ in merged.rows()
    }
    # 10 perf samples over py-spy's 20:10 split; threads keep perf's comm
    assert rows["dumps"] == (7, Thread(10, 10, "api"))
    assert rows["parse"] == (3, Thread(11, 10, "api-worker"))


def test_a_process_perf_did_not_see_or_py_spy_did_not_sample_is_left_as_perf_has_it() -> None:
    window = perf_window()
    merged = with_python_stacks(window, {30: spy_run()})
    assert by_process(merged) == by_process(window)
    assert {f.function for f in merged.frames} == {"_PyEval_EvalFrameDefault", "work"}


def test_apportion_keeps_the_total_and_the_proportions() -> None:
    assert apportion(10, [20, 10]) == [7, 3]
    assert apportion(3, [1, 1, 1, 1]) == [1, 1, 1, 0]
    assert sum(apportion(38, [5, 9, 1, 17])) == 38
    assert apportion(4, [0, 0]) == [0, 0]


def test_cpython_is_told_by_its_executable_or_libpython() -> None:
    assert is_cpython(Process(exe="/usr/bin/python3.11"))
    assert is_cpython(Process(exe="/opt/venv/bin/python"))
    assert is_cpython(Process(exe="/usr/bin/uwsgi", libraries=("/usr/lib/libpython3.11.so.1.0",)))
    assert not is_cpython(Process(exe="/usr/bin/python-config-helper"))
    assert not is_cpython(Process(exe="/usr/bin/hotspots", libraries=("/usr/lib/libz.so.1",)))


def test_a_window_takes_the_runs_that_overlap_it_else_the_nearest_within_a_window(
    tmp_path: Path,
) -> None:
    sampler = PythonSampler(tmp_path, rate=19, window_s=10, max_processes=0, log=print)
    first, second = spy_run(), spy_run()
    sampler.done = {10: [RunStacks(first, 100.0, 109.0), RunStacks(second, 109.5, 118.5)]}

    def leaves(start: float, end: float) -> int:
        merged = sampler.merge(Window("w", start, end, perf_window(), rate_hz=19)).profile
        return sum(c for stack, _, c, _, _ in merged.rows() if merged.frames[stack[0]] == DUMPS)

    assert leaves(100, 110) == 7  # both runs overlap it: their mix, perf's count
    assert leaves(118.7, 128.7) == 7  # none overlaps: the second, 0.2 s before it
    assert sampler.sampled == 2  # each run counted once, however many windows it served
    assert leaves(129, 139) == 0 and not sampler.done  # over a window away: perf's samples


def test_the_agents_own_children_are_never_chosen(tmp_path: Path) -> None:
    """The agent's perf maps libpython (for perf script) but runs no interpreter."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = PythonSampler(tmp_path, rate=19, window_s=10, max_processes=3, log=print)
        embedding = ("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",)
        processes = {
            pid: Process(exe="/usr/bin/perf", libraries=embedding) for pid in (1, child.pid)
        }
        sampler._busiest(processes)
        assert 1 in sampler.seen and child.pid not in sampler.seen
    finally:
        child.kill()
        child.wait()


def test_only_processes_busier_than_py_spy_costs_are_chosen(tmp_path: Path) -> None:
    """A mostly idle Python process (about 1% of a core) is not worth a py-spy run."""
    spin = "while True: pass"
    idle = "import time\nwhile True:\n    time.sleep(0.1); sum(range(20000))"
    pids = [detached(code) for code in (spin, idle)]
    try:
        sampler = PythonSampler(tmp_path, rate=19, window_s=10, max_processes=3, log=print)
        processes = {pid: Process(exe=sys.executable) for pid in pids}
        sampler._busiest(processes)
        time.sleep(1.5)
        assert list(sampler._busiest(processes)) == [pids[0]]
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


def detached(code: str) -> int:
    """A Python process that is not this one's child (the agent's children are never chosen)."""
    launcher = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} >/dev/null 2>&1 & echo $!"
    out = subprocess.run(["sh", "-c", launcher], capture_output=True, text=True, check=True)
    return int(out.stdout)
