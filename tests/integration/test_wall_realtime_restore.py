"""wallsnap makes a thread without a CPU at a snapshot's instant realtime
(SCHED_FIFO) until it stops. Ended mid-snapshot by SIGTERM (perfsleuth's stop after
its timeout) or by perfsleuth's death (PR_SET_PDEATHSIG), it must give every such
thread its own policy back: a busy service left with realtime threads starves the
rest of its machine.

The ends come at random moments, many times, against six threads that never block
(so every snapshot boosts some): on the code before, 7 of 40 SIGTERMs left a
thread realtime. Nothing here asserts a duration.
"""

from __future__ import annotations

import functools
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from test_offcpu_wall import VENV_BIN

from perfsleuth.collect import wallsnap

pytestmark = pytest.mark.integration
T = TypeVar("T")

SPINNERS_SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "wall" / "spinners.c"
SPINNERS = 6
SIGTERM_ROUNDS = 40
DEATH_ROUNDS = 16
BUDGET_S = 25.0  # per test: rounds stop early on a slow machine, never fail for it
HANG_GUARD_S = 60.0


@pytest.fixture
def spinners(tmp_path: Path) -> Iterator[int]:
    binary = tmp_path / "spinners"
    subprocess.run(["cc", "-O2", "-pthread", "-o", binary, SPINNERS_SOURCE], check=True)
    proc = subprocess.Popen([binary])
    try:
        until(lambda: len(os.listdir(f"/proc/{proc.pid}/task")) == SPINNERS + 1)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def until(condition: Callable[[], T]) -> T:
    """Polls condition until it is true, and returns it; fails (a hang, not a slow
    machine) after HANG_GUARD_S."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not (found := condition()):
        if time.monotonic() > deadline:
            pytest.fail("waited a minute for a process to start or end")
        time.sleep(0.01)
    return found


def realtime_threads(pid: int) -> list[int]:
    found = []
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            if os.sched_getscheduler(tid) in (os.SCHED_FIFO, os.SCHED_RR):
                found.append(tid)
        except ProcessLookupError:
            continue
    return found


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wallsnap_child(recorder: subprocess.Popen) -> int | None:
    assert recorder.poll() is None, "perfsleuth record ended before wallsnap started"
    for task in os.listdir(f"/proc/{recorder.pid}/task"):
        try:
            children = Path(f"/proc/{recorder.pid}/task/{task}/children").read_text().split()
        except FileNotFoundError:
            continue
        for child in map(int, children):
            try:
                if Path(f"/proc/{child}/comm").read_text().startswith(wallsnap.NAME):
                    return child
            except FileNotFoundError:
                continue
    return None


def test_sigterm_mid_snapshot_gives_every_boosted_thread_its_policy_back(spinners: int) -> None:
    tool = wallsnap.binary()
    assert tool is not None, "wallsnap could not be built"
    rng = random.Random()
    started = time.monotonic()
    rounds = 0
    statuses: set[int | None] = set()
    while rounds < SIGTERM_ROUNDS and (rounds == 0 or time.monotonic() - started < BUDGET_S):
        snapper = subprocess.Popen(
            [tool, str(spinners), "1000"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert snapper.stdout is not None
        assert snapper.stdout.readline().startswith(b"WAKE realtime"), "not run as root?"
        time.sleep(rng.uniform(0.0, 0.2))
        snapper.send_signal(signal.SIGTERM)
        snapper.communicate(timeout=HANG_GUARD_S)
        rounds += 1
        assert realtime_threads(spinners) == [], f"left realtime after SIGTERM (round {rounds})"
        statuses.add(snapper.returncode)
    assert statuses == {128 + signal.SIGTERM}, "each ended by its handler, not by SIGTERM itself"


def test_perfsleuth_killed_mid_record_leaves_no_thread_realtime(
    spinners: int, tmp_path: Path
) -> None:
    argv = [str(VENV_BIN / "perfsleuth"), "record", "--mode", "wall", "--freq", "1000"]
    argv += ["--pid", str(spinners), "--duration", "60"]
    rng = random.Random()
    started = time.monotonic()
    rounds = 0
    while rounds < DEATH_ROUNDS and (rounds == 0 or time.monotonic() - started < BUDGET_S):
        recorder = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        snapper = until(functools.partial(wallsnap_child, recorder))
        time.sleep(rng.uniform(0.0, 0.3))
        recorder.kill()  # perfsleuth gets no chance to stop it: only PDEATHSIG does
        recorder.wait()
        until(functools.partial(gone, snapper))
        rounds += 1
        assert realtime_threads(spinners) == [], f"left realtime after perfsleuth died ({rounds})"
