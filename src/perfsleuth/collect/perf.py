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
import select
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NoSamples, UserError
from ..formats import perf_data
from ..model.profile import Profile
from ..model.run import Recording
from . import callgraph_mode, command_cgroup, perf_access, sampling_gap, target
from .options import RecordOptions

# Frame-pointer stacks are cheap; DWARF stacks copy 8 KiB of user stack per
# sample, so they get a lower default rate.
DEFAULT_FREQ = {"fp": 3999, "dwarf": 999}
ATTACH_TIMEOUT_S = 60.0
# perf 6.1's record and script abort (build-id.c:1010) on some BPF programs loaded
# while it records, seen here while other tools' programs came and went; the cost
# of not following them is that samples inside BPF programs stay unnamed.
NO_BPF_EVENTS = ("--no-bpf-event",)
# perf's ring buffer per CPU, where it may lock that much (perf_access.may_lock_memory;
# else perf's default, kernel.perf_event_mlock_kb: 512 KiB). A DWARF sample is ~8.3 KiB,
# so 512 KiB held 60 ms of one busy thread's samples at 999 Hz: on a loaded machine perf,
# waiting for a CPU, drained it too late and lost 88% of an nginx worker's samples
# (LOST_SAMPLES), and the ones kept were not a fair draw (they follow perf's runs, which
# follow the worker's blocks): all mode read its epoll_wait +2.7 to +6.2 points over its
# clock. The size is BUFFER_BYTES, at most BUFFER_BUDGET over all the CPUs.
BUFFER_BYTES = {"dwarf": 32 << 20, "fp": 4 << 20}
BUFFER_BUDGET = 256 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")
# Per CPU in the command's cgroup (command_cgroup.py): a software clock, so a sample's
# weight is the CPU time it stands for, in ns, on every machine.
PER_CPU_EVENT = "cpu-clock"


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
    per_task_reason: str | None = None  # why sampled per task ("": per CPU); None: --pid


def perf_binary() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise UserError("perf is not installed; install it with `apt-get install linux-perf`")
    return perf


def call_graph_args(mode: str) -> list[str]:
    return ["--call-graph", "dwarf"] if mode == "dwarf" else ["--call-graph", "fp"]


def buffer_args(mode: str, access: perf_access.Access | None = None) -> list[str]:
    """perf's -m (pages per CPU, a power of 2) for samples of this call-graph mode, or
    none where perf may not lock more than its default (BUFFER_BYTES)."""
    if not perf_access.may_lock_memory(access or perf_access.current_access()):
        return []
    per_cpu = min(BUFFER_BYTES[mode], BUFFER_BUDGET // (os.cpu_count() or 1))
    pages = 1 << (max(per_cpu // PAGE, 1).bit_length() - 1)
    return ["-m", str(pages)]


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
    group: command_cgroup.CommandCgroup | str = "not tried"
    try:
        group = command_cgroup.create(launched.pid)
        proc, group = _start_sampling(launched.pid, group, out, rate, mode)
    except BaseException:
        launched.abort()
        _remove(group)
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
        _remove(group)
    elapsed = time.monotonic() - started
    per_task_reason = group if isinstance(group, str) else ""
    return PerfRun(out, status, elapsed, mode, rate, choice.reason, cpu_s, per_task_reason)


def _start_sampling(
    pid: int, group: command_cgroup.CommandCgroup | str, out: Path, rate: int, mode: str
) -> tuple[subprocess.Popen, command_cgroup.CommandCgroup | str]:
    """perf sampling PID's cgroup per CPU where there is one, else PID per task; a
    per-CPU perf that does not start falls back to per task, with the reason."""
    if isinstance(group, command_cgroup.CommandCgroup):
        argv = [*_record_argv(out, rate, mode), "-a", "-e", PER_CPU_EVENT, "-G", group.name]
        try:
            return attach(argv, pid, out.parent), group
        except UserError:
            group.remove()
            group = f"perf record -a -G {group.name} did not start"
    return start_attached(pid, out, rate, mode), group


def _remove(group: command_cgroup.CommandCgroup | str) -> None:
    if isinstance(group, command_cgroup.CommandCgroup):
        group.remove()


def _record_pid(pid: int, out: Path, freq: int | None, call_graph: str, duration: float) -> PerfRun:
    target.check_pid(pid)
    choice = callgraph_mode.decide(_pid_exe(pid), call_graph)
    mode = choice.mode
    rate = freq or DEFAULT_FREQ[mode]
    argv = [*_record_argv(out, rate, mode), "-p", str(pid)]
    started = time.monotonic()
    _run_perf(argv, out, pid, duration)
    return PerfRun(out, None, time.monotonic() - started, mode, rate, choice.reason)


def _record_argv(out: Path, rate: int, mode: str) -> list[str]:
    argv = [perf_binary(), "record", "-q", *NO_BPF_EVENTS, "-o", str(out), "-F", str(rate)]
    return argv + call_graph_args(mode) + buffer_args(mode)


def start_attached(pid: int, data: Path, rate: int, mode: str) -> subprocess.Popen:
    """`perf record -p PID` sampling at RATE, returned once its events are enabled."""
    return attach([*_record_argv(data, rate, mode), "-p", str(pid)], pid, data.parent)


def attach(argv: list[str], pid: int, fifo_dir: Path) -> subprocess.Popen:
    """`perf record ...` (ARGV) sampling PID (-p PID, or -G with PID in the cgroup),
    returned once its events are enabled. Its own session: Ctrl-C reaches the target
    only, and perf is stopped after the target ends."""
    return start_enabled(argv, pid, fifo_dir, stdin=subprocess.DEVNULL, start_new_session=True)


def start_enabled(
    argv: list[str], pid: int, fifo_dir: Path, workload: Sequence[str] = (), **spawn: Any
) -> subprocess.Popen:
    """`perf record ARGV [-- WORKLOAD]` sampling PID, started with SPAWN's options and
    returned once its events are enabled (its control fifos in FIFO_DIR)."""
    ctl, ack = fifo_dir / f"perf-{pid}.ctl", fifo_dir / f"perf-{pid}.ack"
    for fifo in (ctl, ack):
        os.mkfifo(fifo)
    control = ["-D", "-1", "--control", f"fifo:{ctl},{ack}"]
    proc = target.spawn([*argv, *control, *workload], **spawn)
    try:
        _enable(proc, pid, ctl, ack)
    except BaseException:
        target.stop(proc)
        raise
    finally:
        ctl.unlink()
        ack.unlink()
    return proc


def _enable(proc: subprocess.Popen, pid: int, ctl: Path, ack: Path) -> None:
    """perf starts with its events disabled (-D -1) and enables them when told to on
    its control fifo, after it has set up (with -a, after reading every process on the
    host), answering "ack". Waiting for that answer, not for perf to hold its event
    files plus a moment, is what keeps the target's start: under load the moment was
    too short for -a, and a short command had no samples at all. A target that ended
    meanwhile (record --pid of a process that exits as bpftrace starts, in all mode) is
    said so, not taken for perf's permissions."""
    # O_RDWR: neither open waits for perf to open its end, and the ack end never hangs up
    ctl_fd, ack_fd = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR)
    try:
        os.write(ctl_fd, b"enable\n")
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([ack_fd], [], [], 0.05)
            if ready and b"ack" in os.read(ack_fd, 64):
                return
    finally:
        os.close(ctl_fd)
        os.close(ack_fd)
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
    perf runs quietly (-q) and only its startup failure is summarised here. Recording
    is said to begin once perf's events are on, not when perf starts: a SIGINT 1 s
    after the word, at load 11, stopped a perf that had not sampled yet."""
    proc = start_enabled(argv, pid, out.parent, ("--", "sleep", str(duration)))
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
    meta = _sampling_meta(run)
    profile = _read_or_say_the_gap(run.data, meta, options.pid, run.duration_s)
    profile.sample_state = ["running"] * len(profile.sample_state)
    gap = sampling_gap.gap_warning(profile, meta)
    if gap:
        print(f"perfsleuth: warning: {gap}", file=sys.stderr)
    return Recording(profile, exit_status=run.exit_status, duration_s=run.duration_s, meta=meta)


def _sampling_meta(run: PerfRun) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "call_graph": run.call_graph,
        "call_graph_reason": run.call_graph_reason,
        "freq": run.freq,
        "recorder": "perf",
    }
    if run.cpu_s is not None:
        meta[sampling_gap.META_KEY] = round(run.cpu_s, 3)
    if run.per_task_reason is not None:
        meta["sampled"] = "per task" if run.per_task_reason else "per CPU"
        if run.per_task_reason:
            meta[sampling_gap.PER_TASK_REASON] = run.per_task_reason
    return meta


def _read_or_say_the_gap(
    data: Path, meta: dict[str, Any], pid: int | None, duration_s: float
) -> Profile:
    """The profile in DATA; one that kept no sample of a command that used the CPU for
    many periods (1,000 children of 0.6 ms each, sampled per task) is refused with the
    gap, and one of a process attached to (PID) as idle, not as a command that ran too
    briefly."""
    try:
        return perf_data.read(data)
    except NoSamples:
        gap = sampling_gap.empty_warning(meta) or _idle(pid, duration_s)
        if not gap:
            raise
        raise NoSamples(f"{gap}; nothing was stored") from None


def _idle(pid: int | None, duration_s: float) -> str:
    if pid is None:
        return ""
    return (
        f"pid {pid} was not seen on a CPU in the {duration_s:.1f} s recorded: it was idle or "
        f"waiting (`perfsleuth record --mode wall --pid {pid}` shows where its threads wait)"
    )
