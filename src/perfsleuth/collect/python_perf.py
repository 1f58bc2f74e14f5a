"""Python mode (the default for CPython): perf's native stacks spliced with py-spy's
Python stacks, recorded side by side without stopping the process.

Why not `py-spy --native` (`--mode python-native`, collect/python.py): it stops the
process at every sample to unwind its native stack, +36% on json_heavy.py at 100 Hz.
Here each tool does the half it does cheaply, and formats/tool_output/python_splice.py joins them:

- `perf record -k CLOCK_MONOTONIC --call-graph dwarf` at `--freq` (100 Hz): native
  stacks, the kernel copying the user stack at each sample. DWARF because CPython 3.11
  (Debian's, pyenv's) is built without frame pointers (`--call-graph fp` is honoured);
  CLOCK_MONOTONIC because py-spy's trace and time.monotonic() are on it too.
- `py-spy record --nonblocking --threads --format chrometrace` at SPY_RATE_HZ: the
  Python frames, read from memory while the process runs, and when each thread's stack
  changed (its origin is the moment py-spy is started, taken here). Ten times perf's
  rate, so that a change is seen about a millisecond after it happens; the reading is
  py-spy's work, on its own CPU time, not the target's.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..formats import py_spy
from ..formats.tool_output import perf_samples, py_spy_trace, python_splice
from ..model.profile import Profile
from ..model.run import Recording
from .options import RecordOptions
from .perf import NO_BPF_EVENTS, attach, perf_binary
from .perf_access import CAP_PERFMON, CAP_SYS_ADMIN, Access, current_access
from .python import (
    DEFAULT_DURATION_S,
    DEFAULT_RATE_HZ,
    SpyRun,
    executable,
    follow_command,
    interpreter_in,
    note_end,
    py_spy_binary,
    record_python_native,
    spy_facts,
    spy_failure,
    start_spy,
    wait_spy,
)
from .target import Target, check_pid, spawn, stop

SPY_RATE_HZ = 1000
CLOCK = "CLOCK_MONOTONIC"
SCRIPT_TIMEOUT_S = 600.0
PERF_EXIT_TIMEOUT_S = 10.0


def record_python(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode python: perf + py-spy --nonblocking, spliced; py-spy --native
    alone where perf may not sample the process."""
    tool = py_spy_binary()
    access = current_access()
    if not may_sample_own(access):
        print(
            f"perfsleuth: perf may not sample here (kernel.perf_event_paranoid="
            f"{access.paranoid}, no CAP_PERFMON): recording with py-spy --native alone, "
            "which stops the process at each sample (--mode python-native)",
            file=sys.stderr,
        )
        return record_python_native(options, cmd, workdir)
    rate = options.freq or DEFAULT_RATE_HZ
    unwind = "fp" if options.call_graph == "fp" else "dwarf"
    # Kernel frames where perf may take them: a program writing a line per write(2)
    # spends its time there, on top of its Python stack (py-spy's are user stacks).
    # Else --all-user: user-space events of one's own processes are allowed up to
    # kernel.perf_event_paranoid=2 without privileges.
    # -B: no build-id pass when perf ends (the samples are read at once, from the files on
    # disk)
    perf_argv = [perf_binary(), "record", "-q", "-B", *NO_BPF_EVENTS, "-k", CLOCK]
    perf_argv += [] if may_sample_kernel(access) else ["--all-user"]
    perf_argv += ["-F", str(rate)]
    perf_argv += ["--call-graph", unwind, "-o", str(workdir / "perf.data")]
    if options.pid is not None:
        duration = options.duration or DEFAULT_DURATION_S
        return _record_pid(tool, perf_argv, options.pid, duration, rate, workdir)
    return _record_command(tool, perf_argv, cmd, rate, workdir)


def may_sample_own(access: Access) -> bool:
    """perf may sample the user space of one's own processes: with CAP_PERFMON or
    CAP_SYS_ADMIN (root has them), else up to kernel.perf_event_paranoid=2."""
    return _may(access, 2)


def may_sample_kernel(access: Access) -> bool:
    """perf may take the kernel stacks of one's own processes too: with those
    capabilities, else up to kernel.perf_event_paranoid=1."""
    return _may(access, 1)


def _may(access: Access, paranoid: int) -> bool:
    privileged = access.cap_eff & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN)
    return access.paranoid is not None and (bool(privileged) or access.paranoid <= paranoid)


def _record_command(
    tool: str, perf_argv: list[str], cmd: list[str], rate: int, workdir: Path
) -> Recording:
    label = " ".join(cmd[:2])
    target = Target.launch(cmd)
    try:
        perf = attach([*perf_argv, "-p", str(target.pid)], target.pid, workdir)
    except BaseException:
        target.abort()
        raise
    started = time.monotonic()
    try:
        target.release()
        followed = follow_command(target, cmd, lambda pid: _spy(tool, pid, None, workdir), True)
    finally:
        stop(perf)
    duration = time.monotonic() - started
    spy, pid = followed.spy, followed.pid
    lost = followed.watched.lost
    run = _Run(
        tool, spy, followed.origin, pid, label, followed.since, lost, followed.exe, followed.slack
    )
    profile, meta = _spliced(run, workdir, rate)
    return Recording(profile, exit_status=target.exit_status, duration_s=duration, meta=meta)


def _record_pid(
    tool: str, perf_argv: list[str], pid: int, duration: float, rate: int, workdir: Path
) -> Recording:
    check_pid(pid)
    pid = interpreter_in(pid) or pid  # a runner's (`uv run`) interpreter child
    exe = executable(pid)
    # not attach(): missing perf's first milliseconds costs nothing here, and a short-lived
    # process must not end while we wait for perf to be ready
    with (workdir / "perf.log").open("wb") as log:
        argv = [*perf_argv, "-p", str(pid)]
        perf = spawn(argv, stdin=subprocess.DEVNULL, stderr=log, start_new_session=True)
    started = time.monotonic()
    stopped = False
    try:
        spy = _spy(tool, pid, duration, workdir)
        origin = time.monotonic()  # Popen returns once py-spy's exec succeeded
        slack = origin - started
        stopped = wait_spy(spy, pid, duration)
        if not Target(pid).alive():
            # perf ends by itself when the process is gone; stopped while it still reads
            # the process's maps (a short-lived one), it would write nothing at all
            perf.wait(timeout=PERF_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        stop(perf)
    elapsed = time.monotonic() - started
    run = _Run(tool, spy, origin, pid, f"process {pid}", 0.0, "", exe, slack)
    profile, meta = _spliced(run, workdir, rate)
    note_end(spy, pid, elapsed, duration, profile.num_samples, stopped)
    return Recording(profile, duration_s=elapsed, meta=meta)


def _spy(tool: str, pid: int, duration: float | None, workdir: Path) -> SpyRun:
    """py-spy's trace run. Its clock starts as it starts recording, soon after its exec,
    between the call and the moment Popen returns (taken as its origin: 13-85 ms apart
    at load 13); formats/tool_output/python_splice.py finds where from the samples."""
    return start_spy(tool, pid, SPY_RATE_HZ, duration, workdir / f"py-spy-{pid}.json", trace=True)


@dataclass(frozen=True)
class _Run:
    """What the splice needs of a recording: py-spy's run, when Popen returned it
    (ORIGIN) and how long that took (SLACK: its clock started in between), the
    interpreter's PID, the moment the command became that interpreter (SINCE: samples
    before it are of a shim or a runner) and why py-spy gave no Python frames (LOST, ""
    when it did)."""

    tool: str
    spy: SpyRun
    origin: float
    pid: int
    label: str
    since: float
    lost: str
    exe: str  # the interpreter's executable
    slack: float


def _lost(run: _Run) -> tuple[str, bool]:
    """Why py-spy gave no trace of the run ("" when it did), and whether that alone
    ends the recording."""
    if run.lost or (run.spy.out.exists() and run.spy.out.stat().st_size > 0):
        return run.lost, False
    return spy_failure(run.spy, run.pid, run.label)


def _spliced(run: _Run, workdir: Path, rate: int) -> tuple[Profile, dict]:
    """The mixed stacks of the run (kept in py-spy's raw format as py-spy.txt) and facts;
    the native stacks alone, said so on stderr and in the facts, when py-spy gave none."""
    lost, fatal = _lost(run)
    raced = fatal and "exited before any sample" in lost
    if fatal and not raced:
        raise UserError(lost)
    timelines = {} if lost else py_spy_trace.read(run.spy.out, run.origin)
    script = workdir / "perf.txt"
    _perf_script(workdir / "perf.data", script, run.label)
    with script.open(encoding="utf-8", errors="replace") as text:
        # perf -p follows the children the process starts; py-spy does not
        samples = perf_samples.samples(text, script.name)
        own = (s for s in samples if s.pid == run.pid and s.time >= run.since)
        spliced = python_splice.splice(own, timelines, run.slack)
    if not spliced.lines:
        raise UserError(
            f"{run.label} (pid {run.pid}) exited before any sample was taken; nothing recorded"
        )
    if raced:
        # perf sampled it: py-spy, slower to attach, found the short-lived process gone
        lost = f"{run.label} (pid {run.pid}) exited before py-spy could read it"
    if not lost and not spliced.python:
        lost = (
            f"py-spy read no Python stack of the threads perf sampled in {run.label} "
            f"(pid {run.pid})"
        )
    mixed = workdir / "py-spy.txt"
    mixed.write_text("".join(f"{stack} {count}\n" for stack, count in spliced.lines.items()))
    meta = {"recorder": "perf+py-spy", "freq": rate, "py_spy_rate": SPY_RATE_HZ}
    meta["samples_before_py_spy"] = spliced.early
    meta["samples_in_py_spy_stalls"] = spliced.stalled
    meta["interpreter"] = run.exe
    total = sum(spliced.lines.values())
    meta["python_frames"] = round(spliced.python / total, 3)
    if spliced.stalled:
        print(
            f"perfsleuth: {spliced.stalled} of {total} samples ({spliced.stalled / total:.1%}) "
            "fell where py-spy, waiting for a CPU, read no Python stack: kept with their "
            "native frames only",
            file=sys.stderr,
        )
    if lost:
        meta["python_frames_missing"] = lost
        print(
            f"perfsleuth: no Python frames: {lost}; stored the native frames only, "
            "as --mode cpu would (the python.* findings say so)",
            file=sys.stderr,
        )
    return py_spy.read(mixed, freq=rate), {**meta, **spy_facts(run.tool, run.spy)}


def _perf_script(data: Path, out: Path, label: str) -> None:
    if not data.exists() or data.stat().st_size == 0:
        log = data.with_name("perf.log")
        said = log.read_text(errors="replace") if log.exists() else ""
        if "No such process" in said:
            raise UserError(f"{label} exited before perf could attach to it; nothing recorded")
        first = next((ln.strip() for ln in said.splitlines() if len(ln.strip()) > 8), "no output")
        raise UserError(f"perf record failed on {label}: {first}; nothing recorded")
    argv = [perf_binary(), "script", "-i", str(data), "-F", perf_samples.FIELDS]
    with out.open("wb") as sink:
        try:
            done = subprocess.run(
                argv, stdout=sink, stderr=subprocess.PIPE, timeout=SCRIPT_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as e:
            raise UserError(f"perf script took over {SCRIPT_TIMEOUT_S:g} s; nothing stored") from e
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise UserError(f"perf script failed on the recording: {(lines or ['no output'])[0]}")
