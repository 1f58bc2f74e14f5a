"""On-CPU sampling with `perf record`.

The target's stdin, stdout and stderr are inherited untouched; perf's own
chatter is silenced (-q) and its errors are turned into one-line messages.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..formats import perf_data
from ..model.run import Recording
from . import callgraph_mode
from .options import RecordOptions

# Frame-pointer stacks are cheap; DWARF stacks copy 8 KiB of user stack per
# sample, so they get a lower default rate.
DEFAULT_FREQ = {"fp": 3999, "dwarf": 999}


@dataclass
class PerfRun:
    """One `perf record`: its perf.data and how it sampled."""

    data: Path
    exit_status: int | None
    duration_s: float
    call_graph: str
    freq: int


def perf_binary() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise UserError("perf is not installed; install it with `apt-get install linux-perf`")
    return perf


def check_command(cmd: list[str]) -> Path:
    """The executable CMD starts, or a clear error if there is none to run."""
    if not cmd:
        raise UserError("no command given; usage: perfsleuth record -- CMD ARGS...")
    path = callgraph_mode.resolve_executable(cmd[0])
    if path is None:
        raise UserError(f"command not found: {cmd[0]}")
    if not os.access(path, os.X_OK):
        raise UserError(f"{path} is not executable; check its permissions")
    return path


def check_pid(pid: int) -> None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError as e:
        raise UserError(f"no process with PID {pid}; check the PID with `ps`") from e
    except PermissionError as e:
        raise UserError(
            f"process {pid} belongs to another user; run perfsleuth as that user or as root"
        ) from e


def call_graph_args(mode: str) -> list[str]:
    return ["--call-graph", "dwarf"] if mode == "dwarf" else ["--call-graph", "fp"]


def record(
    cmd: list[str] | None,
    out: Path,
    *,
    freq: int | None = None,
    call_graph: str = "auto",
    pid: int | None = None,
    duration: float | None = None,
) -> PerfRun:
    """Run `perf record` on CMD, or on PID for DURATION seconds."""
    perf = perf_binary()
    if pid is not None:
        check_pid(pid)
        exe = _pid_exe(pid)
        mode = callgraph_mode.choose(exe, call_graph)
        target = ["-p", str(pid), "--", "sleep", str(duration or 10)]
    else:
        assert cmd is not None
        check_command(cmd)
        mode = callgraph_mode.choose(cmd[0], call_graph)
        target = ["--", *cmd]
    rate = freq or DEFAULT_FREQ[mode]
    argv = [perf, "record", "-q", "-o", str(out), "-F", str(rate), *call_graph_args(mode), *target]
    started = time.monotonic()
    status = _run_perf(argv, out)
    elapsed = time.monotonic() - started
    if not out.exists() or out.stat().st_size == 0:
        raise UserError(
            "perf recorded nothing; check that perf works: "
            f"`perf record -o /tmp/t.data -- {shlex.join(cmd or ['true'])}`"
        )
    return PerfRun(
        data=out,
        exit_status=None if pid is not None else status,
        duration_s=elapsed,
        call_graph=mode,
        freq=rate,
    )


def _pid_exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _run_perf(argv: list[str], out: Path) -> int:
    """Run perf with the terminal's stdio; Ctrl-C reaches the target, and we keep what
    was recorded. perf's own messages share stderr with the target's, so perf runs
    quietly (-q) and only its startup failure is summarised here."""
    proc = subprocess.Popen(argv)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        status = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    if status == 255 and (not out.exists() or out.stat().st_size == 0):
        raise UserError(
            "perf record failed to start; if it says 'Permission denied', run as root or "
            "lower /proc/sys/kernel/perf_event_paranoid (sysctl kernel.perf_event_paranoid=1)"
        )
    return status


def record_cpu(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode cpu: perf samples, every one of a running thread."""
    run = record(
        cmd or None,
        workdir / "perf.data",
        freq=options.freq,
        call_graph=options.call_graph,
        pid=options.pid,
        duration=options.duration,
    )
    profile = perf_data.read(run.data)
    profile.sample_state = ["running"] * len(profile.sample_state)
    return Recording(
        profile,
        exit_status=run.exit_status,
        duration_s=run.duration_s,
        meta={"call_graph": run.call_graph, "freq": run.freq, "recorder": "perf"},
    )
