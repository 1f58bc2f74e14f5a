"""On-CPU sampling with `perf record`.

The target's stdin, stdout and stderr are inherited untouched; perf's own
chatter is silenced (-q) and its errors are turned into one-line messages.
A command is started held at the gate (target.Target) and perf attached to it
with -p before it runs, as the other modes do: the target is our child, so its
exit status is ours to report (128+signal when a signal ends it) and the
signals sent to us reach it (target.Target.wait).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..formats import perf_data
from ..model.run import Recording
from . import callgraph_mode, sampling_gap, target
from .options import RecordOptions

# Frame-pointer stacks are cheap; DWARF stacks copy 8 KiB of user stack per
# sample, so they get a lower default rate.
DEFAULT_FREQ = {"fp": 3999, "dwarf": 999}
ATTACH_TIMEOUT_S = 60.0
# perf 6.1's record and script abort (build-id.c:1010) on some BPF programs loaded
# while it records, seen here while other tools' programs came and went; the cost
# of not following them is that samples inside BPF programs stay unnamed.
NO_BPF_EVENTS = ("--no-bpf-event",)
PERF_SETTLE_S = 0.3  # after perf holds its events, for it to enable them


@dataclass
class PerfRun:
    """One `perf record`: its perf.data and how it sampled."""

    data: Path
    exit_status: int | None
    duration_s: float
    call_graph: str
    freq: int
    call_graph_reason: str = ""
    cpu_s: float | None = None  # the command's CPU time, its waited-for children's too


def perf_binary() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise UserError("perf is not installed; install it with `apt-get install linux-perf`")
    return perf


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
    if pid is not None:
        run = _record_pid(pid, out, freq, call_graph, duration or 10)
    else:
        assert cmd is not None
        run = _record_command(cmd, out, freq, call_graph)
    if not out.exists() or out.stat().st_size == 0:
        raise UserError(
            "perf recorded nothing; check that perf works: "
            f"`perf record -o /tmp/t.data -- {shlex.join(cmd or ['true'])}`"
        )
    return run


def _record_command(cmd: list[str], out: Path, freq: int | None, call_graph: str) -> PerfRun:
    target.check_command(cmd)
    choice = callgraph_mode.decide(cmd[0], call_graph)
    mode = choice.mode
    rate = freq or DEFAULT_FREQ[mode]
    launched = target.Target.launch(cmd)
    try:
        proc = start_attached(launched.pid, out, rate, mode)
    except BaseException:
        launched.abort()
        raise
    started = time.monotonic()
    cpu_before = sampling_gap.children_cpu_s()
    try:
        launched.release()
        launched.wait(None)
        status = launched.exit_status  # reaped: its CPU time is in our children's now
        cpu_s = sampling_gap.children_cpu_s() - cpu_before
    finally:
        target.stop(proc)  # SIGINT: perf writes what it has
    elapsed = time.monotonic() - started
    return PerfRun(out, status, elapsed, mode, rate, choice.reason, cpu_s)


def _record_pid(pid: int, out: Path, freq: int | None, call_graph: str, duration: float) -> PerfRun:
    target.check_pid(pid)
    choice = callgraph_mode.decide(_pid_exe(pid), call_graph)
    mode = choice.mode
    rate = freq or DEFAULT_FREQ[mode]
    argv = [*_record_argv(out, rate, mode), "-p", str(pid), "--", "sleep", str(duration)]
    started = time.monotonic()
    _run_perf(argv, out, pid, duration)
    return PerfRun(out, None, time.monotonic() - started, mode, rate, choice.reason)


def _record_argv(out: Path, rate: int, mode: str) -> list[str]:
    argv = [perf_binary(), "record", "-q", *NO_BPF_EVENTS, "-o", str(out), "-F", str(rate)]
    return argv + call_graph_args(mode)


def start_attached(pid: int, data: Path, rate: int, mode: str) -> subprocess.Popen:
    """`perf record -p PID` sampling at RATE, returned once its events are open."""
    return attach([*_record_argv(data, rate, mode), "-p", str(pid)])


def attach(argv: list[str]) -> subprocess.Popen:
    """`perf record ... -p PID` (ARGV), returned once its events are open. Its own
    session: Ctrl-C reaches the target only, and perf is stopped after the target ends."""
    proc = target.spawn(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for_perf_events(proc, int(argv[argv.index("-p") + 1]))
    except BaseException:
        target.stop(proc)
        raise
    return proc


def _wait_for_perf_events(proc: subprocess.Popen, pid: int) -> None:
    """perf -p says nothing when it is ready: wait until it holds perf_event files,
    plus a moment to enable them, so the target's exec is not missed. A target that
    ended meanwhile (record --pid of a process that exits as bpftrace starts, in all
    mode) is said so, not taken for perf's permissions."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    fds = Path(f"/proc/{proc.pid}/fd")
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            links = [os.readlink(fd) for fd in fds.iterdir()]
        except OSError:
            links = []
        if any("perf_event" in link for link in links):
            time.sleep(PERF_SETTLE_S)
            return
        time.sleep(0.02)
    if not target.running(pid):
        raise UserError(
            f"process {pid} ended before perf could attach to it; nothing was stored: "
            "record a process that runs longer, or launch it (perfsleuth record -- CMD)"
        )
    raise UserError(
        "perf record -p did not start; if it says 'Permission denied', run as root or "
        "lower /proc/sys/kernel/perf_event_paranoid (sysctl kernel.perf_event_paranoid=1)"
    )


def _pid_exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _run_perf(argv: list[str], out: Path, pid: int, duration: float) -> None:
    """Run perf -p ... -- sleep with the terminal's stdio; Ctrl-C reaches it and we
    keep what was recorded. perf's own messages share stderr with the target's, so
    perf runs quietly (-q) and only its startup failure is summarised here."""
    proc = target.spawn(argv)
    target.wait_attached(proc, pid, duration, same_group=True)
    status = proc.wait()
    if status == 255 and (not out.exists() or out.stat().st_size == 0):
        raise UserError(
            "perf record failed to start; if it says 'Permission denied', run as root or "
            "lower /proc/sys/kernel/perf_event_paranoid (sysctl kernel.perf_event_paranoid=1)"
        )


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
    meta = {
        "call_graph": run.call_graph,
        "call_graph_reason": run.call_graph_reason,
        "freq": run.freq,
        "recorder": "perf",
    }
    if run.cpu_s is not None:
        meta[sampling_gap.META_KEY] = round(run.cpu_s, 3)
    gap = sampling_gap.gap_warning(profile, meta)
    if gap:
        print(f"perfsleuth: warning: {gap}", file=sys.stderr)
    return Recording(profile, exit_status=run.exit_status, duration_s=run.duration_s, meta=meta)
