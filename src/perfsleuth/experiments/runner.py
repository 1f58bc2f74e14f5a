"""Runs the sides of an experiment interleaved and measures every run.

Round i runs each side once, after `warmup` unmeasured rounds, so that slow
drift of the machine (thermal, other load, page cache) hits every side alike. The
order within each measured round is drawn at random (A B or B A): with a fixed
order, whatever favours the first or second run of a round (a load that ramps up,
caches the previous command warmed) would bias every pair the same way, and two
identical commands would no longer be exchangeable within a pair, which the
signed-rank test of stats.py relies on.

Each run is a child process reaped with os.wait4, whose rusage gives user and
system time and peak RSS of exactly that child (and the children it
waited for). Wall time is taken around spawn and reap. perfsleuth is the
subreaper of what runs leave behind: helper processes a program killed without
waiting for them are reaped after its run and their CPU time added to it.

Peak RSS comes from GNU time wrapped around the command: the kernel's maxrss of a
process keeps the high-water mark of whatever it was before exec, and perfsleuth's
own Python (tens of MiB) would show up as every small program's peak. GNU time is a
small process, so the program it forks starts from a clean slate.

The metric "cpu" compares user + system time: steadier than wall time on a
shared machine, as time spent waiting for a core does not count, but blind to
what a multi-threaded program gains or loses in parallelism. Without --metric,
choose_metric takes it when the load average is above the number of cores, and
says so.

The metric "instructions" counts retired user-space instructions per run instead:
with `perf stat` where the machine has the hardware counter, else with valgrind's
callgrind (its total Ir, following child processes). Counts do not depend on caches
being warm, so no warm-up is run for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..model.progress import SILENT, Progress

METRICS = ("time", "cpu", "instructions")
BUSY_NOTE = (
    "the machine is busy (load average {load:.1f} on {cores} cores): measured CPU time "
    "(user+sys) instead of wall time, which waiting for a core inflates; --metric time "
    "insists on wall time (CPU time misses what a program gains from parallelism)"
)
STDERR_TAIL_LINES = 8
GNU_TIME = "/usr/bin/time"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@dataclass
class Side:
    """One thing being measured: a command and the environment it needs."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to os.environ
    cwd: str | None = None  # None: perfsleuth's own working folder


@dataclass
class Measurement:
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int | None
    exit_status: int
    instructions: float | None = None
    adopted: int = 0  # processes the command left behind, reaped: their time is counted
    stderr_tail: list[str] = field(default_factory=list)  # only kept for failed runs

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def value(self, metric: str) -> float:
        if metric == "instructions":
            return self.instructions or 0.0
        if metric == "cpu":
            return self.user_s + self.sys_s
        return self.wall_s

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        if not self.stderr_tail:
            del doc["stderr_tail"]
        for optional in ("instructions", "max_rss_kb"):
            if doc[optional] is None:
                del doc[optional]
        if not self.adopted:
            del doc["adopted"]
        return doc


@dataclass
class Series:
    """All runs of one side: the measured rounds, and the warm-up rounds apart."""

    side: Side
    runs: list[Measurement] = field(default_factory=list)
    warmup: list[Measurement] = field(default_factory=list)


def shell_or_argv(words: Sequence[str]) -> list[str]:
    """`-- prog arg` stays as is; `-- 'prog arg | tee x'` (one word with spaces) goes to sh."""
    if len(words) == 1 and re.search(r"\s", words[0]) and not Path(words[0]).exists():
        return ["/bin/sh", "-c", words[0]]
    return list(words)


def check_runnable(side: Side) -> str:
    """The full path of the program the side would start, or a clear UserError."""
    if not side.argv:
        raise UserError("no command given")
    program = side.argv[0]
    if side.cwd and "/" in program:
        program = os.path.join(side.cwd, program)
    found = shutil.which(program, path=side.env.get("PATH", os.environ.get("PATH")))
    if found is None:
        raise UserError(f"command not found or not executable: {side.argv[0]}")
    return found


def choose_metric(requested: str | None) -> tuple[str, str]:
    """The metric to measure with, and the note saying why when perfsleuth chose it."""
    return metric_for_load(requested, os.getloadavg()[0], os.cpu_count() or 1)


def metric_for_load(requested: str | None, load: float, cores: int) -> tuple[str, str]:
    """Wall time, unless more runnable processes than cores would make it mostly noise."""
    if requested:
        return requested, ""
    if load > cores:
        return "cpu", BUSY_NOTE.format(load=load, cores=cores)
    return "time", ""


@functools.cache
def perf_counts_instructions() -> bool:
    """Whether `perf stat` can count instructions here (no PMU in most VMs)."""
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(
        ["perf", "stat", "-x,", "-e", "instructions:u", "--", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    first = probe.stderr.strip().split(",", 1)[0]
    return probe.returncode == 0 and first.isdigit()


def instruction_counter() -> str:
    if perf_counts_instructions():
        return "perf"
    if shutil.which("valgrind"):
        return "valgrind"
    raise UserError(
        "--metric instructions needs perf with an instructions counter or valgrind; "
        "install valgrind (apt-get install -y valgrind)"
    )


def _counting_argv(argv: list[str], counter: str, outdir: Path) -> list[str]:
    if counter == "perf":
        return [
            "perf",
            "stat",
            "-x,",
            "-e",
            "instructions:u",
            "-o",
            str(outdir / "perf"),
            "--",
        ] + argv
    return [
        "valgrind",
        "--tool=callgrind",
        "--trace-children=yes",
        "--callgrind-out-file=/dev/null",
        f"--log-file={outdir}/callgrind.%p",
    ] + argv


def _rss_argv(argv: list[str], outdir: Path) -> list[str]:
    if not Path(GNU_TIME).exists():
        return argv
    return [GNU_TIME, "-f", "%M", "-o", str(outdir / "rss"), "--"] + argv


def _read_rss(outdir: Path) -> int | None:
    try:
        last = (outdir / "rss").read_text().split()[-1]
    except (OSError, IndexError):
        return None
    return int(last) if last.isdigit() else None


def _read_count(counter: str, outdir: Path) -> float:
    if counter == "perf":
        for line in (outdir / "perf").read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
                return float(fields[0])
        return 0.0
    total = 0.0
    for log in outdir.glob("callgrind.*"):
        for hit in re.finditer(r"Collected\s*:\s*(\d+)", log.read_text(errors="replace")):
            total += float(hit.group(1))
    return total


def _tail(path: Path) -> list[str]:
    lines = path.read_text(errors="replace").splitlines()
    return lines[-STDERR_TAIL_LINES:]


@contextlib.contextmanager
def adopting_orphans() -> Iterator[None]:
    """This process the subreaper of what its commands leave behind while they run: a
    program that kills its helper processes without waiting for them (K2 kills its Z3
    servers) would otherwise leave their CPU time in no rusage, and `--metric cpu` would
    miss it. Undone after, so the process's other children's orphans go to init again
    (a long-lived caller, `serve` or a test run, keeps no adopted processes)."""
    _subreaper(1)
    try:
        yield
    finally:
        _subreaper(0)


def _subreaper(on: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, on, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: orphans go to init, as before


@dataclass(frozen=True)
class Reaped:
    """Adopted processes that had exited, reaped: how many, and their CPU time."""

    count: int = 0
    user_s: float = 0.0
    sys_s: float = 0.0


def reap_orphans() -> Reaped:
    """Reap the adopted processes that have exited."""
    reaped = Reaped()
    while True:
        try:
            pid, _status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reaped = Reaped(
            reaped.count + 1, reaped.user_s + usage.ru_utime, reaped.sys_s + usage.ru_stime
        )
    return reaped


def run_once(side: Side, metric: str = "time") -> Measurement:
    """Run the side's command once, output discarded, and measure it."""
    with tempfile.TemporaryDirectory(prefix="perfsleuth-run-") as tmp:
        workdir = Path(tmp)
        counter = instruction_counter() if metric == "instructions" else ""
        argv = _counting_argv(side.argv, counter, workdir) if counter else side.argv
        argv = _rss_argv(argv, workdir)
        stderr_path = workdir / "stderr"
        with open(stderr_path, "wb") as err:
            start = time.perf_counter()
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env={**os.environ, **side.env},
                    cwd=side.cwd,
                )
            except OSError as e:
                raise UserError(f"cannot start {side.argv[0]}: {e.strerror}") from e
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
        orphans = reap_orphans()
        proc.returncode = os.waitstatus_to_exitcode(status)
        m = Measurement(
            wall_s=wall,
            user_s=usage.ru_utime + orphans.user_s,
            sys_s=usage.ru_stime + orphans.sys_s,
            max_rss_kb=_read_rss(workdir),
            exit_status=proc.returncode,
            instructions=_read_count(counter, workdir) if counter else None,
            adopted=orphans.count,
        )
        if not m.ok:
            m.stderr_tail = _tail(stderr_path)
        return m


def measure(
    sides: Sequence[Side],
    runs: int,
    warmup: int,
    metric: str = "time",
    progress: Progress = SILENT,
) -> list[Series]:
    """Interleaved rounds of every side; returns one Series per side, in order."""
    for side in sides:
        check_runnable(side)
    series = [Series(side) for side in sides]
    warm_rounds = 0 if metric == "instructions" else warmup
    total = warm_rounds + runs
    order = random.Random()
    progress.phase(
        f"running {len(sides)} commands: {warm_rounds} warm-up and {runs} measured rounds",
        total=total * len(series),
    )
    with adopting_orphans():
        for round_no in range(total):
            warming = round_no < warm_rounds
            for s in series if warming else order.sample(series, len(series)):
                m = run_once(s.side, metric)
                (s.warmup if warming else s.runs).append(m)
                progress.advance()
    return series
