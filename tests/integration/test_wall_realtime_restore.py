"""wallsnap makes a thread without a CPU at a snapshot's instant realtime
(SCHED_FIFO) until it stops. Ended mid-snapshot by SIGTERM (perfsleuth's stop after
its timeout) or by perfsleuth's death (PR_SET_PDEATHSIG), it must give every such
thread its own policy back: a busy service left with realtime threads starves the
rest of its machine.

The ends come at random moments, many times, against six threads that never block
(so every snapshot boosts some): on the code before, 7 of 40 SIGTERMs left a
thread realtime. A SIGKILL of wallsnap cannot be caught: its guardian process gives
the threads back, or perfsleuth does from wallsnap's journal when the guardian was
killed too (on the code before, 7 of 40 SIGKILLs sent while a thread was realtime
left it so). Nothing here asserts a duration.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import re
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
RECORD = [str(VENV_BIN / "perfsleuth"), "record", "--mode", "wall", "--freq", "1000"]
RECORD += ["--duration", "60", "--pid"]


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
        except (FileNotFoundError, ProcessLookupError):
            continue
        for child in map(int, children):
            try:
                if Path(f"/proc/{child}/comm").read_text().startswith(wallsnap.NAME):
                    return child
            except (FileNotFoundError, ProcessLookupError):  # a child that ended meanwhile
                continue
    return None


def children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return found


def kill_when_realtime(pid: int, victims: list[int], rng: random.Random) -> None:
    """SIGKILLs victims as soon as a thread of pid is seen realtime (mid-snapshot), or
    after a random moment of up to 0.3 s without one."""
    moment = time.monotonic() + rng.uniform(0.0, 0.3)
    while not realtime_threads(pid) and time.monotonic() < moment:
        pass
    for victim in victims:
        os.kill(victim, signal.SIGKILL)


def named(pid: int, name: str) -> bool:
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    return False


def test_sigkill_of_wallsnap_and_perfsleuth_its_guardian_gives_them_back(
    spinners: int, tmp_path: Path
) -> None:
    rng = random.Random()
    started = time.monotonic()
    rounds = 0
    while rounds < DEATH_ROUNDS and (rounds == 0 or time.monotonic() - started < BUDGET_S):
        recorder = subprocess.Popen(
            RECORD + [str(spinners)],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        snapper = until(functools.partial(wallsnap_child, recorder))
        guardian = until(functools.partial(children, snapper))[0]
        until(functools.partial(named, guardian, "wallsnap-guard"))
        kill_when_realtime(spinners, [snapper, recorder.pid], rng)
        recorder.wait()
        until(functools.partial(gone, guardian))
        rounds += 1
        assert realtime_threads(spinners) == [], f"left realtime after SIGKILL (round {rounds})"


def test_sigkill_of_wallsnap_and_its_guardian_perfsleuth_gives_them_back(
    spinners: int, tmp_path: Path
) -> None:
    argv = RECORD + [str(spinners)]
    tids = set(map(int, os.listdir(f"/proc/{spinners}/task")))
    rng = random.Random()
    started = time.monotonic()
    rounds = 0
    while rounds < DEATH_ROUNDS and (rounds == 0 or time.monotonic() - started < BUDGET_S):
        recorder = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        snapper = until(functools.partial(wallsnap_child, recorder))
        guardian = until(functools.partial(children, snapper))[0]
        kill_when_realtime(spinners, [guardian, snapper], rng)  # as `pkill -9 wallsnap`
        _out, err = recorder.communicate(timeout=HANG_GUARD_S)
        rounds += 1
        assert realtime_threads(spinners) == [], f"left realtime after SIGKILL ({rounds})"
        said = next(line for line in err.splitlines() if "wallsnap was killed" in line)
        assert said.startswith("perfsleuth: wallsnap was killed by SIGKILL; the recording ends")
        named = re.search(r"made realtime have their own policy back \(([\d, ]+)\)", said)
        assert named is None or set(map(int, named[1].split(", "))) <= tids, said
        assert "COULD NOT" not in said
        # the snapshots taken until then are kept, or none was complete yet
        assert recorder.returncode == 0 or "no stack snapshot was taken" in err, err


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
    argv = RECORD + [str(spinners)]
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
