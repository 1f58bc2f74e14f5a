"""Python frames in the agent's windows: py-spy beside perf on the busiest CPython processes.

perf shows a CPython process as `_PyEval_EvalFrameDefault`; py-spy (collect/python.py
says why py-spy and not our own reader of interpreter memory) reads its Python
frames. A process is taken for CPython when its executable is named `python`,
`python3`, `python3.11`, ... or it maps a `libpython` (an embedding server, uwsgi).

As in python mode (collect/python_perf.py), each tool does the half it does cheaply
and formats/tool_output/python_splice.py joins them: `py-spy record --nonblocking --format
chrometrace` reads the Python stacks from memory without stopping the process and
says when each thread's stack changed; the agent's own perf samples (kernel and
native frames, taken on CLOCK_MONOTONIC: collect/system_wide.py) each take the Python
stack their thread had at that moment, in place of the eval loops. perf stays the
measure of CPU time: every sample keeps its weight, thread and comm, and its kernel
frames and the native frames above the Python code (the C function Python called:
`zlib_compress`, `deflate`), less the interpreter's own functions (`pymalloc_alloc`,
`PyLong_FromLong`: the time of the Python line that ran them), left out by the
splice's one rule as in python mode. A sample no run covers (a process just chosen, the gaps
between runs, py-spy's first 20-300 ms on a process) keeps its native stack. Sample
times come from the window's timeline, which joins consecutive samples of one thread
on one native stack: those share the first one's time (1-5% of a busy process's
samples here).

Why one `py-spy record --duration W-1` per process and window (W-1 s, so that a run
and the start of the next fit in a window): py-spy writes its output only when a
recording ends and cannot rotate it. At SPY_RATE_HZ it sees a stack change within
10 ms, which the splice allows for (its LAG), and costs about 0.024 s of CPU per
second sampled (python mode's 1000 Hz cost 0.15 s); a Python call shorter than its
gap may go unseen, its native work then counted under the caller py-spy saw (5 of
183 spliced samples in tests/fixtures/py_spy/agent: tokenize's split under
pack_logs). docs/python.md has the agent's measured cost. Hence a cap
(`--python-processes`, default 3): every quarter window the busiest CPython
processes by CPU time since the last choice are chosen, and each chosen one always
has a run going; idle ones (below 5% of a core), and the agent itself, are not
sampled.

Near its CPU cap the agent sets `asked_only`: no new run starts then but on processes
`--python-match` names, and runs going finish their window. At the defaults py-spy on
one process costs more than a 1% cap of a 2-CPU host by itself. Without
--python-match, the agent may still allow a run then (`service_allowed`, when its
budget spares what a run has cost: `run_cost_s`) on the one busiest CPython process
that is one of the host's services (`is_service`), not another user's session or a
batch job: so a loaded host's services keep Python frames in some windows, within the
budget, and py-spy's cost (`python_cpu_s`) is in the agent's status.

A process py-spy cannot read (permission, a version it does not know, not CPython
after all) is skipped with a counted warning and not tried again while it lives;
one that exits mid-run keeps the samples taken until then.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from ..collect.python import INTERPRETER, SpyRun, failure_line, py_spy_binary, start_spy
from ..errors import UserError
from ..formats import py_spy
from ..formats.tool_output import py_spy_trace, python_splice
from ..formats.tool_output.perf_samples import NativeFrame, Sample
from ..model.fleet import Process, Window
from ..model.profile import Frame, Profile, ProfileBuilder
from ..model.timeline import Timeline
from .overhead import cpu_seconds

# py-spy's rate: a tenth of python mode's 1000 Hz, which cost 15% of a core per process
SPY_RATE_HZ = 100
STOP_TIMEOUT_S = 10.0
# finished runs kept per process (about one a window): the agent converts at most 6
# files behind perf
KEEP_RUNS = 8
# py-spy's failures that will not change while the process lives (collect.python's lines)
REFUSALS = ("cannot read", "is not a CPython")
# A process using less of one core than this is not sampled: py-spy costs ~2.5% of a
# core per process (above), and at 19 Hz it gives perf about a sample a second, too
# few for its Python frames to rank. (A collector on the agent's host, mostly idle,
# cost the agent 1.2% of a 2-CPU host in py-spy runs.)
MIN_CORE_SHARE = 0.05
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
NS = 1e-9
# What a run costs until the agent has measured one: 0.024 CPU-s per second sampled.
SPY_CPU_S_PER_S = 0.024
# A service's cgroup (systemd's units, containers); users' sessions are under user.slice.
SERVICE_CGROUP = re.compile(r"\.service$|docker|containerd|kubepods|libpod|lxc")
# Where cgroups say nothing (every process in "/", as in a container), a process that
# has run this long is taken for a service rather than a job or a test.
SERVICE_AGE_S = 300


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
    origin: float  # CLOCK_MONOTONIC s: about when py-spy's clock started
    slack: float  # s: how much earlier it may have started (the time Popen took)


@dataclass
class RunStacks:
    """What one run saw, over [start, end] (CLOCK_MONOTONIC s): each thread's Python
    stack from each change on."""

    timelines: dict[int, py_spy_trace.Timeline]
    start: float
    end: float
    slack: float = 0.0  # as _Run's
    used: bool = False


@dataclass
class _Sampled:
    """perf's samples of a window that one run covers, with their (stack, thread) ids."""

    run: RunStacks
    samples: list[Sample] = field(default_factory=list)
    keys: list[tuple[int, int]] = field(default_factory=list)


def is_cpython(process: Process) -> bool:
    """An interpreter by its executable's name, or a program embedding libpython."""
    return _is_cpython(process.exe, process.libraries)


@lru_cache(maxsize=4096)
def _is_cpython(exe: str, libraries: tuple[str, ...]) -> bool:
    # asked of every process every few seconds: one look at each distinct program
    if INTERPRETER.match(Path(exe).name):
        return True
    return any(Path(lib).name.startswith("libpython") for lib in libraries)


def is_service(process: Process, stat: ProcStat, uptime_s: float) -> bool:
    """One of the host's services: a systemd service's or a container's cgroup, or,
    where the cgroup is the root (no such information), running for SERVICE_AGE_S."""
    cgroup = process.cgroup
    if cgroup.startswith("/user.slice"):
        return False
    if cgroup not in ("", "/"):
        return SERVICE_CGROUP.search(cgroup) is not None
    return uptime_s - stat.start / TICKS_PER_S >= SERVICE_AGE_S


def _uptime_s() -> float:
    try:
        return float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


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
        window_s: int,
        max_processes: int,
        log: Callable[[str], None],
        match: str = "",
    ) -> None:
        self.workdir = workdir
        self.match = re.compile(match) if match else None
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
        self.spliced = 0  # perf samples given Python frames
        self.stalled = 0  # perf samples left native in py-spy's stalls
        self.skipped = 0
        self.cpu_s = 0.0
        self.asked_only = False  # set by the agent near its CPU cap
        self.service_allowed = False  # set by the agent: a run on a service fits its budget
        self.service_runs = 0  # runs started on a service under asked_only
        self.reaped = 0  # runs ended, for run_cost_s
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
        the `max_processes` busiest CPython processes since the last choice (none
        when `asked_only` and no --python-match)."""
        if self.tool is None:
            return
        if time.monotonic() >= self.next_rank:
            self.next_rank = time.monotonic() + self.rank_every
            self.chosen = self._choose(processes)
        self._reap()
        for pid, name in self.chosen.items():
            stat = proc_stat(pid)
            if pid not in self.runs and stat is not None and stat.start == self.seen[pid].start:
                self.service_runs += self.asked_only and self.match is None
                self._start(pid, name, stat)

    def _choose(self, processes: Mapping[int, Process]) -> dict[int, str]:
        """The processes to sample until the next choice: the busiest (those
        --python-match names); near the cap without --python-match, the one busiest of
        the host's services when the budget allows a run, else none (and no ranking)."""
        if not self.asked_only or self.match is not None:
            return self._busiest(processes)
        if not self.service_allowed:
            return {}
        return self._busiest(processes, services_only=True)

    def run_cost_s(self) -> float:
        """CPU seconds a run has cost on average (an estimate until one ended)."""
        if not self.reaped:
            return SPY_CPU_S_PER_S * self.duration
        return self.cpu_s / self.reaped

    def _busiest(
        self, processes: Mapping[int, Process], services_only: bool = False
    ) -> dict[int, str]:
        """pid -> name of the CPython processes that used the most CPU since the last
        choice (at least MIN_CORE_SHARE of a core, none refused, at most max_processes;
        with `services_only`, the one busiest of the host's services)."""
        now = {
            pid: stat
            for pid, process in processes.items()
            if pid != self.own
            and is_cpython(process)
            and self._matches(pid)
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
        if services_only:
            uptime = _uptime_s()
            busy = {p: n for p, n in busy.items() if is_service(processes[p], now[p], uptime)}
        most = 1 if services_only else self.max_processes
        ranked = sorted(busy, key=busy.__getitem__, reverse=True)[:most]
        return {pid: Path(processes[pid].exe).name or "python" for pid in ranked}

    def _matches(self, pid: int) -> bool:
        """Whether PID's command line matches --python-match (always, without one)."""
        if self.match is None:
            return True
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return self.match.search(argv.replace(b"\0", b" ").decode(errors="replace")) is not None

    def _start(self, pid: int, name: str, stat: ProcStat) -> None:
        assert self.tool is not None
        self.workdir.mkdir(parents=True, exist_ok=True)
        out = self.workdir / f"{pid}.json"
        called = time.monotonic()
        spy = start_spy(self.tool, pid, SPY_RATE_HZ, self.duration, out, trace=True)
        # Popen returns once py-spy's exec succeeded; the splice finds the few ms more
        started = time.monotonic()
        self.runs[pid] = _Run(spy, stat, name, started, started - called)

    def _reap(self) -> None:
        for pid, run in list(self.runs.items()):
            if _exited(run.spy.proc.pid):
                self.cpu_s += cpu_seconds(run.spy.proc.pid)
                self.reaped += 1
                run.spy.proc.wait()
                del self.runs[pid]
                self._finish(pid, run)

    def _finish(self, pid: int, run: _Run) -> None:
        """Keep the run's stacks for the next window; say why when it failed."""
        spy = run.spy
        try:
            if spy.out.exists() and spy.out.stat().st_size:
                timelines = py_spy_trace.read(spy.out, run.origin)
                seen = RunStacks(timelines, run.origin, time.monotonic(), run.slack)
                self.done[pid] = [*self.done.get(pid, [])[1 - KEEP_RUNS :], seen]
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
        """The window with Python frames spliced into perf's samples of each process that
        a run covers at their time (the window's timeline, dropped here, dates them)."""
        self._reap()
        profile = replace(window.profile, timeline=None)
        timeline = window.profile.timeline
        if timeline is None or not self.done:
            return replace(window, profile=profile)
        self._forget(timeline)
        covered = self._covered(profile, timeline)
        if not covered:
            return replace(window, profile=profile)
        self.sampled += len({id(part.run) for part in covered if not part.run.used})
        for part in covered:
            part.run.used = True
        return replace(window, profile=self._spliced(profile, covered))

    def _forget(self, timeline: Timeline) -> None:
        """Windows come in order: runs that ended before this one's first sample are done."""
        first = min(timeline.time_ns, default=0) * NS
        for pid, runs in list(self.done.items()):
            self.done[pid] = [r for r in runs if r.end >= first]
            if not self.done[pid]:
                del self.done[pid]

    def _covered(self, profile: Profile, timeline: Timeline) -> list[_Sampled]:
        """perf's samples of the spied processes, by the run that covers each."""
        runs = {pid: sorted(runs, key=lambda r: r.start) for pid, runs in self.done.items()}
        starts = {pid: [r.start for r in rs] for pid, rs in runs.items()}
        parts: dict[int, _Sampled] = {}
        native: dict[int, tuple[NativeFrame, ...]] = {}
        columns = (timeline.stack, timeline.thread, timeline.count, timeline.time_ns)
        for sid, ti, count, when in zip(*columns, strict=True):
            thread = profile.threads[ti] if ti >= 0 else None
            if thread is None or thread.pid not in runs:
                continue
            at = when * NS
            index = bisect.bisect_right(starts[thread.pid], at) - 1
            if index < 0 or at > (run := runs[thread.pid][index]).end:
                continue
            part = parts.setdefault(id(run), _Sampled(run))
            if sid not in native:
                native[sid] = _native([profile.frames[f] for f in profile.stacks[sid]])
            sample = Sample(thread.pid, thread.tid, at, native[sid])
            part.samples.extend([sample] * count)  # the timeline dates a run of samples once
            part.keys.extend([(sid, ti)] * count)
        return list(parts.values())

    def _spliced(self, profile: Profile, covered: list[_Sampled]) -> Profile:
        """The profile with each covered sample on its mixed stack, its weight perf's."""
        out = ProfileBuilder(unit=profile.unit, meta=dict(profile.meta))
        totals: dict[tuple[int, int], list[float]] = {}  # (stack, thread) -> [weight, count]
        for sid, w, c, t, _ in profile.columns():
            total = totals.setdefault((sid, t), [0.0, 0])
            total[0] += w
            total[1] += c
        moved: dict[tuple[int, int], int] = {}
        for part in covered:
            placed = python_splice.place(part.samples, part.run.timelines, part.run.slack)
            self.stalled += sum(where.stalled for where in placed)
            for (sid, ti), where in zip(part.keys, placed, strict=True):
                if where.python:
                    frames = _mixed([profile.frames[f] for f in profile.stacks[sid]], where)
                    weight, count = totals[(sid, ti)]
                    out.add(frames, weight / count, thread=profile.threads[ti])
                    moved[(sid, ti)] = moved.get((sid, ti), 0) + 1
        self.spliced += sum(moved.values())
        for sid, w, c, t, state in profile.columns():
            taken = min(c, moved.get((sid, t), 0))
            moved[(sid, t)] = moved.get((sid, t), 0) - taken
            if taken < c:
                thread = profile.threads[t] if t >= 0 else None
                stack = [profile.frames[f] for f in profile.stacks[sid]]
                out.add(stack, w * (c - taken) / c, count=c - taken, thread=thread, state=state)
        return replace(out.build(), dsos=profile.dsos)

    def describe(self) -> str:
        if self.tool is None:
            return "no Python frames"
        return (
            f"Python frames of the {self.max_processes} busiest CPython processes by "
            f"py-spy --nonblocking at {SPY_RATE_HZ} Hz, spliced into perf's samples"
        )

    def metrics(self) -> dict[str, float | int]:
        return {
            "python_processes": len(self.runs),
            "python_runs": self.sampled,
            "python_skipped": self.skipped,
            "python_samples": self.spliced,
            "python_stalled": self.stalled,
            "python_cpu_s": self.cpu_s,
            "python_service_runs": self.service_runs,
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


def _native(frames: Sequence[Frame]) -> tuple[NativeFrame, ...]:
    """The agent's frames as the splice reads perf script's: an inlined frame shares
    the address of the frame it is inlined into (only equality matters there)."""
    out, physical = [], 0
    for frame in frames:
        dso = python_splice.KERNEL if frame.kernel else "inlined" if frame.inlined else frame.dso
        out.append(NativeFrame(physical, frame.function, dso))
        physical += not frame.inlined
    return tuple(out)


def _mixed(frames: Sequence[Frame], placed: python_splice.Placed) -> list[Frame]:
    """A sample's stack, leaf first: its kernel frames (perf puts them first), the user
    frames the splice keeps on top (the interpreter's own left out), then the Python
    stack."""
    kernel = [f for f in frames if f.kernel]
    user = [f for f in frames if not f.kernel]
    kept = [user[i] for i in placed.kept]
    return [*kernel, *kept, *map(_python_frame, reversed(placed.python))]


@lru_cache(maxsize=8192)
def _python_frame(text: str) -> Frame:
    return py_spy.parse_frame(text)
