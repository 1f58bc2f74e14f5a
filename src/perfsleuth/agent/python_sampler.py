"""Python frames in the agent's windows: py-spy on the busiest CPython processes of the host.

perf shows a CPython process as `_PyEval_EvalFrameDefault`; py-spy (collect/python.py
says why py-spy and not our own reader of interpreter memory) gives its Python
frames interleaved with the native ones. A process is taken for CPython when its
executable is named `python`, `python3`, `python3.11`, ... or it maps a `libpython`
(an embedding server, uwsgi).

Why one `py-spy record --native --duration W-1` per process and window (W-1 s, so
that a run and the start of the next fit in a window): py-spy writes its raw output
only when a recording ends and cannot rotate it, and `py-spy dump` starts afresh
for each stack. A run costs its start (about 0.06 s of CPU here: the interpreter's
symbols and the DSOs' unwind tables) and about 0.016 s of CPU per second sampled at
19 Hz; with 10 s windows, 2.5% of one core per sampled process (docs/python.md has
the agent's measured cost). `--native` pauses the process for each sample (19 short
stops a second at the agent's default rate). Hence a cap (`--python-processes`,
default 3): every quarter window the busiest CPython processes by CPU time since the
last choice are chosen, and each chosen one always has a run going; idle ones (below
5% of a core), and the agent itself, are not sampled.

Not counted twice: perf stays the measure of CPU time. In a window, the samples
perf took of a process py-spy sampled are replaced by py-spy's stacks, scaled so
that the process keeps perf's sample count and CPU time (py-spy's own counts are
not CPU time: it counts a thread waiting for a CPU as active, and misses the
moments between two of its runs). Its threads keep the comm perf gave them. A
window takes the stacks of the runs that overlap it in time (a run ends when
py-spy writes its output), else of the nearest run less than a window away, so an
agent converting windows late still pairs each with its own seconds; a run often
serves two windows. A process with no run that near keeps its native samples in
that window; kernel frames of a sampled process are lost (py-spy reads user
stacks only).

A process py-spy cannot read (permission, a version it does not know, not CPython
after all) is skipped with a counted warning and not tried again while it lives;
one that exits mid-run keeps the samples taken until then.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..collect.python import INTERPRETER, SpyRun, failure_line, py_spy_binary, start_spy
from ..errors import UserError
from ..formats import py_spy
from ..model.fleet import Process, Window
from ..model.profile import Profile, ProfileBuilder, Thread
from .overhead import cpu_seconds

DEFAULT_PROCESSES = 3
STOP_TIMEOUT_S = 10.0
# py-spy's failures that will not change while the process lives (collect.python's lines)
REFUSALS = ("cannot read", "is not a CPython")
# A process using less of one core than this is not sampled: py-spy costs ~2.5% of a
# core per process (above), and at 19 Hz it gives perf about a sample a second, too
# few for its Python frames to rank. (A collector on the agent's host, mostly idle,
# cost the agent 1.2% of a 2-CPU host in py-spy runs.)
MIN_CORE_SHARE = 0.05
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStat:
    start: int  # clock ticks after boot: tells a reused pid apart
    cpu_ticks: int
    parent: int


@dataclass
class _Run:
    spy: SpyRun
    stat: ProcStat
    name: str
    started: float  # unix time


@dataclass
class RunStacks:
    """What one run saw, over [start, end) (unix times)."""

    profile: Profile
    start: float
    end: float
    used: bool = False


def is_cpython(process: Process) -> bool:
    """An interpreter by its executable's name, or a program embedding libpython."""
    return _is_cpython(process.exe, process.libraries)


@lru_cache(maxsize=4096)
def _is_cpython(exe: str, libraries: tuple[str, ...]) -> bool:
    # asked of every process every few seconds: one look at each distinct program
    if INTERPRETER.match(Path(exe).name):
        return True
    return any(Path(lib).name.startswith("libpython") for lib in libraries)


def proc_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # after "pid (comm)": ppid is field 4, utime 14, stime 15, starttime 22
    return ProcStat(
        start=int(fields[19]), cpu_ticks=int(fields[11]) + int(fields[12]), parent=int(fields[1])
    )


class PythonSampler:
    """Keeps up to `max_processes` py-spy runs going; hands their stacks to each window."""

    def __init__(
        self,
        workdir: Path,
        *,
        rate: int,
        window_s: int,
        max_processes: int,
        log: Callable[[str], None],
    ) -> None:
        self.workdir = workdir
        self.rate = rate
        # a run and the start of the next one fit in a window: every window gets one
        self.duration = max(1, window_s - 1)
        self.window_s = window_s
        self.rank_every = max(1.0, window_s / 4)
        self.next_rank = 0.0
        self.ranked_at = time.monotonic()
        self.max_processes = max_processes
        self.log = log
        self.tool = self._tool() if max_processes > 0 else None
        self.own = os.getpid()
        self.seen: dict[int, ProcStat] = {}
        self.chosen: dict[int, str] = {}  # pid -> name: the processes to sample
        self.refused: dict[int, int] = {}  # pid -> its start time
        self.runs: dict[int, _Run] = {}
        self.done: dict[int, list[RunStacks]] = {}  # pid -> finished runs, oldest first
        self.sampled = 0  # runs whose stacks reached a window
        self.skipped = 0
        self.cpu_s = 0.0
        shutil.rmtree(workdir, ignore_errors=True)  # a previous agent's unfinished runs

    def _tool(self) -> str | None:
        try:
            return py_spy_binary()
        except UserError as e:
            self.log(f"no Python frames: {e}")
            return None

    # -- runs -------------------------------------------------------------------

    def tick(self, processes: Mapping[int, Process]) -> None:
        """At each turn of the agent's loop: collect the runs that ended and start one
        on each chosen process without one; every `rank_every` seconds, choose again
        the `max_processes` busiest CPython processes since the last choice."""
        if self.tool is None:
            return
        if time.monotonic() >= self.next_rank:
            self.next_rank = time.monotonic() + self.rank_every
            self.chosen = self._busiest(processes)
        self._reap()
        for pid, name in self.chosen.items():
            stat = proc_stat(pid)
            if pid not in self.runs and stat is not None and stat.start == self.seen[pid].start:
                self._start(pid, name, stat)

    def _busiest(self, processes: Mapping[int, Process]) -> dict[int, str]:
        """pid -> name of the CPython processes that used the most CPU since the last
        choice (at least MIN_CORE_SHARE of a core, none refused, at most max_processes)."""
        now = {
            pid: stat
            for pid, process in processes.items()
            if pid != self.own
            and is_cpython(process)
            and (stat := proc_stat(pid)) is not None
            # the agent's own perf maps libpython (for perf script) but runs no interpreter
            and stat.parent != self.own
        }
        before, self.seen = self.seen, now
        ranked_at, self.ranked_at = self.ranked_at, time.monotonic()
        least = max(1.0, MIN_CORE_SHARE * (self.ranked_at - ranked_at) * TICKS_PER_S)
        self.refused = {
            pid: start for pid, start in self.refused.items() if _started_at(now, pid) == start
        }
        busy = {
            pid: stat.cpu_ticks - was.cpu_ticks
            for pid, stat in now.items()
            if (was := before.get(pid)) is not None
            and was.start == stat.start
            and stat.cpu_ticks - was.cpu_ticks >= least
            and pid not in self.refused
        }
        ranked = sorted(busy, key=busy.__getitem__, reverse=True)[: self.max_processes]
        return {pid: Path(processes[pid].exe).name or "python" for pid in ranked}

    def _start(self, pid: int, name: str, stat: ProcStat) -> None:
        assert self.tool is not None
        self.workdir.mkdir(parents=True, exist_ok=True)
        spy = start_spy(self.tool, pid, self.rate, self.duration, self.workdir / f"{pid}.txt")
        self.runs[pid] = _Run(spy, stat, name, time.time())

    def _reap(self) -> None:
        for pid, run in list(self.runs.items()):
            if _exited(run.spy.proc.pid):
                self.cpu_s += cpu_seconds(run.spy.proc.pid)
                run.spy.proc.wait()
                del self.runs[pid]
                self._finish(pid, run)

    def _finish(self, pid: int, run: _Run) -> None:
        """Keep the run's stacks for the next window; say why when it failed."""
        spy = run.spy
        try:
            if spy.out.exists() and spy.out.stat().st_size:
                end = spy.out.stat().st_mtime  # py-spy writes its output as its run ends
                seen = RunStacks(py_spy.read(spy.out, freq=self.rate), run.started, end)
                self.done.setdefault(pid, []).append(seen)
            elif spy.proc.returncode != 0:
                self._skip(pid, run)
        except UserError as e:
            self.skipped += 1
            self.log(f"no Python frames for pid {pid} this window ({e}); {self.skipped} skipped")
        finally:
            spy.out.unlink(missing_ok=True)
            spy.log.unlink(missing_ok=True)

    def _skip(self, pid: int, run: _Run) -> None:
        """A failed run: not tried again before the next choice, or while it runs."""
        self.skipped += 1
        self.chosen.pop(pid, None)
        why = failure_line(run.spy, pid, run.name).split("; ")[0]  # the rest is record's advice
        if any(refusal in why for refusal in REFUSALS):
            self.refused[pid] = run.stat.start
            why += "; not tried again while it runs"
        self.log(f"no Python frames: {why}; {self.skipped} skipped so far")

    def stop(self) -> None:
        """Stop the runs (py-spy writes what it has on SIGINT) and collect them."""
        for run in self.runs.values():
            with contextlib.suppress(ProcessLookupError):
                run.spy.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while self.runs and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)
        for run in self.runs.values():
            run.spy.proc.kill()
            os.waitid(os.P_PID, run.spy.proc.pid, os.WEXITED | os.WNOWAIT)
        self._reap()

    # -- windows ----------------------------------------------------------------

    def merge(self, window: Window) -> Window:
        """The window with the stacks of each process's runs that overlap it, else of
        its nearest run less than a window away (windows come in order, so runs that
        ended a window before this one started are forgotten)."""
        self._reap()
        pids = {t.pid for t in window.profile.threads}
        spied: dict[int, Profile] = {}
        for pid, runs in list(self.done.items()):
            kept = [r for r in runs if r.end > window.start - self.window_s]
            self.done[pid] = kept
            if not kept:
                del self.done[pid]
            elif pid in pids and (stacks := self._stacks_for(kept, window)) is not None:
                spied[pid] = stacks
        if not spied:
            return window
        return replace(window, profile=with_python_stacks(window.profile, spied))

    def _stacks_for(self, runs: list[RunStacks], window: Window) -> Profile | None:
        def gap(r: RunStacks) -> float:
            return max(window.start - r.end, r.start - window.end, 0.0)

        use = [r for r in runs if gap(r) == 0] or [min(runs, key=gap)]
        if gap(use[0]) >= self.window_s:
            return None
        self.sampled += sum(not r.used for r in use)
        for r in use:
            r.used = True
        return _merged([r.profile for r in use])

    def describe(self) -> str:
        if self.tool is None:
            return "no Python frames"
        return f"Python frames of the {self.max_processes} busiest CPython processes by py-spy"

    def metrics(self) -> dict[str, float | int]:
        return {
            "python_processes": len(self.runs),
            "python_runs": self.sampled,
            "python_skipped": self.skipped,
            "python_cpu_s": self.cpu_s,
        }


def _started_at(stats: Mapping[int, ProcStat], pid: int) -> int | None:
    stat = stats.get(pid)
    return stat.start if stat else None


def _exited(pid: int) -> bool:
    """The child has exited; not reaped yet, so its /proc/PID/stat keeps its CPU time."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _merged(profiles: list[Profile]) -> Profile:
    if len(profiles) == 1:
        return profiles[0]
    builder = ProfileBuilder(unit="samples")
    for p in profiles:
        for stack, w, c, t, s in p.rows():
            thread = p.threads[t] if t >= 0 else None
            builder.add([p.frames[f] for f in stack], w, count=c, thread=thread, state=s)
    return builder.build()


def with_python_stacks(profile: Profile, spied: Mapping[int, Profile]) -> Profile:
    """perf's samples of each spied pid replaced by its py-spy stacks, scaled to perf's
    sample count and weight for that pid; the other samples as they are."""
    out = ProfileBuilder(unit=profile.unit, meta=dict(profile.meta))
    totals: dict[int, list[float]] = {}  # pid -> [count, weight] perf took of it
    comms: dict[int, dict[int, str]] = {}  # pid -> tid -> comm, of the spied pids
    for stack, w, c, t, s in profile.rows():
        thread = profile.threads[t] if t >= 0 else None
        if thread is None or thread.pid not in spied:
            out.add([profile.frames[f] for f in stack], w, count=c, thread=thread, state=s)
            continue
        total = totals.setdefault(thread.pid, [0, 0.0])
        total[0] += c
        total[1] += w
        comms.setdefault(thread.pid, {}).setdefault(thread.tid, thread.name)
    for pid, (count, weight) in totals.items():
        _add_scaled(out, spied[pid], pid, int(count), weight, comms[pid])
    return replace(out.build(), dsos=profile.dsos)


def _add_scaled(
    out: ProfileBuilder, spy: Profile, pid: int, count: int, weight: float, comms: dict[int, str]
) -> None:
    rows = list(spy.rows())
    shares = apportion(count, [c for _, _, c, _, _ in rows])
    main = comms.get(pid) or next(iter(comms.values()), "")
    for (stack, _, _, t, _), n in zip(rows, shares, strict=True):
        if n:
            tid = spy.threads[t].tid if t >= 0 else pid
            thread = Thread(tid, pid, comms.get(tid, main))
            frames = [spy.frames[f] for f in stack]
            out.add(frames, weight * n / count, count=n, thread=thread)


def apportion(total: int, counts: list[int]) -> list[int]:
    """`total` split in proportion to `counts`, in whole numbers that add up to it
    (largest remainders first)."""
    whole = sum(counts)
    if whole <= 0:
        return [0] * len(counts)
    shares = [total * c // whole for c in counts]
    order = sorted(range(len(counts)), key=lambda i: total * counts[i] % whole, reverse=True)
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares
