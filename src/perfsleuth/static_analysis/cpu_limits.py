"""The deep analyses' bounds (the hot units they read, the CPU time of advising a
run), in CPU time, not wall time: on a machine busy with other work a compiler or a
parse is slower, and must not be cut short for it.

A compiler runs under `prlimit --cpu` (compiler_remarks.cpu_limited); wall time only
stops one that hangs — one whose processes used no CPU at all for HANG_S seconds —
so a unit waiting for a core is never skipped. The worker that parses a unit bounds
itself with RLIMIT_CPU (cpu_limit).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEEP_TUS = 5  # hot translation units the source analyses read by default
# CPU seconds (this process's and the compilers') of the analysis of a run, within
# which the deep unit analyses start units and past which their compilers are stopped,
# so that advising stays bounded on a program of many or large hot units
DEEP_BUDGET = 10.0

HANG_S = 300  # wall seconds without any CPU used by a compiler's processes: a hang
POLL_S = 5.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the compilers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Hung(Exception):
    """The command used no CPU for HANG_S seconds."""


class OverCpuTime(Exception):
    """This process used the CPU time cpu_limit allowed it."""


def run_unless_hung(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv) with its output captured; Hung (the command killed) when
    it and its children made no progress in CPU time for HANG_S wall seconds."""
    with subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        progress, since = -1.0, time.monotonic()
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=POLL_S)
                return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
            except subprocess.TimeoutExpired:
                used = tree_cpu_seconds(proc.pid)
                if used > progress:
                    progress, since = used, time.monotonic()
                elif time.monotonic() - since > HANG_S:
                    proc.kill()
                    proc.communicate()
                    raise Hung from None


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used by a process and its live descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    family = {pid}
    while True:
        grown = {p for p, parent in parents.items() if parent in family} - family
        if not grown:
            break
        family |= grown
    total = sum(ticks.get(p, 0) for p in family)
    return total / CLOCK_TICKS


@contextmanager
def cpu_limit(seconds: int) -> Iterator[None]:
    """OverCpuTime is raised in this (main) thread once the process has used
    `seconds` more CPU (SIGXCPU at a soft RLIMIT_CPU, put back afterwards)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = int(usage.ru_utime + usage.ru_stime) + seconds + 1
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    previous = signal.signal(signal.SIGXCPU, _over_cpu_time)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        signal.signal(signal.SIGXCPU, previous)


def _over_cpu_time(signum: int, frame: Any) -> None:
    raise OverCpuTime
