"""py-spy for python modes: the `--mode python-native` recorder, and what both python
modes share (how a Python command is told, starting py-spy, its failures in one line).

`--mode python-native` reads `py-spy record --native`: py-spy merges the native stack
(DWARF unwinding) with the Python one in the place of each `_PyEval_EvalFrameDefault`.
`--native` stops the process for each sample (the native unwind needs a stable stack),
+36% on json_heavy.py at 100 Hz, so it is not the default: `--mode python`
(collect/python_perf.py) gets the same stacks from perf and a py-spy that never stops
the process. py-spy's `--nonblocking` cannot be used with `--native`.

Why py-spy and not our own reader of interpreter memory: the layout of CPython's
frames and thread states changes with every minor version (3.11 moved frames into
`_PyInterpreterFrame`, 3.12 and 3.13 changed them again), and py-spy follows
those changes release by release for 2.7 and 3.3-3.14 and reads a process without
touching it. That is the job of a maintained tool; we read its output
(formats/py_spy.py, formats/tool_output/py_spy_trace.py).

A command is started behind the gate (collect/target.py) and py-spy attached to
its PID, so the command keeps the terminal and its exit status, and py-spy's own
messages go to a log that is summarised in one line when something goes wrong.

A command is taken for a Python one (the mode chosen when `--mode` is not given)
when its executable is a CPython interpreter, `python`, `python3`, `python3.11`,
... found on PATH (pyenv shims and venv links included), a script whose `#!`
line names one, or a runner's `run` of one (`uv run app.py`); a running process
when its executable is named so or it maps a libpython.

The process py-spy reads is the interpreter, which need not be the command's first
program: a pyenv shim is a shell script that execs it (after tens of milliseconds,
seconds on a loaded machine), `uv run` starts it as a child. So py-spy is started
once the command's process, or one of its descendants, is a CPython interpreter
(follow_to_interpreter), not on the shell the command began as.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..formats import py_spy
from ..model.run import Recording
from .callgraph_mode import resolve_executable
from .options import RecordOptions
from .target import (
    Target,
    check_pid,
    children_of,
    read_maps,
    say_stopped,
    spawn,
    wait_attached,
)

DEFAULT_RATE_HZ = 100
DEFAULT_DURATION_S = 10.0
SUPPORTED = "CPython 2.7 and 3.3-3.14 (py-spy 0.4.1 and later)"
INTERPRETER = re.compile(r"^python[0-9.]*$")
SPY_EXIT_TIMEOUT_S = 30.0
YAMA = Path("/proc/sys/kernel/yama/ptrace_scope")
SUMMARY = re.compile(r"Samples: (?P<samples>\d+) Errors: (?P<errors>\d+)")
LIBPYTHON = re.compile(r"^libpython\d[\d.]*[a-z]*\.so")
# runners that start the command after their own words: `uv run app.py`, `pyenv exec
# python3 app.py`
RUN = ("uv", "rye", "poetry", "pipenv", "pdm", "hatch", "pixi", "conda", "mamba", "micromamba")
RUNNERS = {**dict.fromkeys(RUN, "run"), "pyenv": "exec"}
FOLLOW_POLL_S = 0.002
# a command not told Python by its name (`--mode python` forced on it) gets this long to
# become one before py-spy is tried on it as it is
UNTOLD_WAIT_S = 10.0


@dataclass
class SpyRun:
    out: Path
    log: Path
    proc: subprocess.Popen

    def failure(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def sampling(self) -> bool:
        """py-spy said it reads the process (its first line)."""
        return "py-spy> Sampling process" in self.failure()


def py_spy_binary() -> str:
    beside = Path(sys.executable).with_name("py-spy")  # the venv perfsleuth runs from
    found = shutil.which("py-spy") or (str(beside) if beside.exists() else None)
    if found is None:
        raise UserError("Python recording needs py-spy; install it with `pip install py-spy`")
    return found


def is_python_command(cmd: list[str]) -> bool:
    """CMD runs a CPython interpreter: by its executable's name, a script's #! line, or
    a runner's `run` of such a command."""
    if not cmd:
        return False
    if len(cmd) > 1 and RUNNERS.get(Path(cmd[0]).name) == cmd[1]:
        return _runs_python(cmd[2:])
    path = resolve_executable(cmd[0])
    if path is None:
        return False
    if INTERPRETER.match(path.name) or INTERPRETER.match(path.resolve().name):
        return True
    return _shebang_interpreter(path)


def _runs_python(words: list[str]) -> bool:
    """The words after a runner's `run`: its options, then the command (an option's
    value may come first: `uv run --with orjson app.py`)."""
    if any(w.endswith(".py") or INTERPRETER.match(Path(w).name) for w in words):
        return True
    command = [w for w in words if not w.startswith("-")]
    return bool(command) and is_python_command(command)


def _shebang_interpreter(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    words = first[2:].decode(errors="replace").split()
    names = [Path(w).name for w in words[:2]]  # `#!/usr/bin/python3` or `#!/usr/bin/env python3`
    return any(INTERPRETER.match(n) for n in names)


def is_python_process(pid: int) -> bool:
    """PID, or a process it started (`uv run`), is a CPython interpreter."""
    return interpreter_in(pid) is not None


def is_cpython(pid: int) -> bool:
    """By its executable's name (or its command name when the executable cannot be read:
    another user's process, python mode then says what is missing), or a libpython it
    maps (an interpreter renamed, a program embedding CPython). A process once seen to be
    one stays one after it exits: py-spy's failure is judged when it is already gone."""
    if pid in _SEEN_CPYTHON:
        return True
    try:
        name = Path(os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")).name
    except PermissionError:
        return bool(INTERPRETER.match(_comm(pid)))
    except OSError:
        return False
    if INTERPRETER.match(name) or any(LIBPYTHON.match(Path(m.path).name) for m in read_maps(pid)):
        _SEEN_CPYTHON.add(pid)
        return True
    return False


# The processes is_cpython found to be CPython, for this command's life: a pid is not
# reused while the recorder still waits on it.
_SEEN_CPYTHON: set[int] = set()


def interpreter_in(pid: int, skip: frozenset[int] = frozenset()) -> int | None:
    """PID when it is a CPython interpreter, else its nearest descendant that is (those
    in SKIP aside)."""
    level, seen = [pid], set()
    while level:
        for each in level:
            if each not in skip and is_cpython(each):
                return each
        seen.update(level)
        level = [c for each in level for c in children_of(each) if c not in seen]
    return None


def follow_to_interpreter(
    target: Target, told: bool, skip: frozenset[int] = frozenset()
) -> int | None:
    """The PID of the interpreter the released TARGET runs: itself once it has exec'd
    one (a pyenv shim), or a child (`uv run`), those in SKIP aside; None when the
    target ends first. A command not TOLD Python by its name gets UNTOLD_WAIT_S to
    become one, then its own PID is given (py-spy then says what it is)."""
    deadline = None if told else time.monotonic() + UNTOLD_WAIT_S
    while target.alive():
        found = interpreter_in(target.pid, skip)
        if found is not None:
            return found
        if deadline is not None and time.monotonic() > deadline:
            return target.pid
        time.sleep(FOLLOW_POLL_S)
    return None


@dataclass
class Followed:
    """py-spy's run on the interpreter a command ran: its PID, when it was found (SINCE,
    CLOCK_MONOTONIC: what came before was a shim's or a runner's) and py-spy started
    (ORIGIN, once Popen returned, which took SLACK s), its executable (EXE, "" when
    unreadable), and how the watch ended."""

    spy: SpyRun
    pid: int
    since: float
    origin: float
    slack: float
    exe: str
    watched: Watched


def follow_command(
    target: Target, cmd: list[str], start: Callable[[int], SpyRun], lenient: bool = False
) -> Followed:
    """py-spy (START(pid)) on the interpreter the released TARGET runs until the command
    ends; when that interpreter is a child that ends first (`uv run`'s question to the
    interpreter before the script), on the next one. The last one's run is kept."""
    told, label = is_python_command(cmd), " ".join(cmd[:2])
    gone: frozenset[int] = frozenset()
    last = None
    while True:
        found = follow_to_interpreter(target, told, gone)
        if found is None and last is not None:
            return last
        pid = target.pid if found is None else found
        exe = executable(pid)
        since = time.monotonic()
        spy = start(pid)
        origin = time.monotonic()  # Popen returns once py-spy's exec succeeded
        watched = watch_command(target, spy, label, pid, lenient)
        last = Followed(spy, pid, since, origin, origin - since, exe, watched)
        if not last.watched.gone:
            return last
        gone |= {pid}


def executable(pid: int) -> str:
    """The file PID runs ("" when it cannot be read)."""
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return ""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def record_python_native(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode python-native: py-spy --native samples of a CPython process."""
    tool = py_spy_binary()
    rate = options.freq or DEFAULT_RATE_HZ
    if options.pid is not None:
        return _record_pid(tool, options.pid, options.duration or DEFAULT_DURATION_S, rate, workdir)
    return _record_command(tool, cmd, rate, workdir)


def _record_command(tool: str, cmd: list[str], rate: int, workdir: Path) -> Recording:
    target = Target.launch(cmd)
    started = time.monotonic()
    target.release()
    followed = follow_command(
        target, cmd, lambda pid: start_spy(tool, pid, rate, None, workdir / f"py-spy-{pid}.txt")
    )
    spy, pid = followed.spy, followed.pid
    duration = time.monotonic() - started
    exit_status = target.exit_status
    return _recording(tool, spy, pid, rate, duration, exit_status, " ".join(cmd[:2]))


@dataclass
class Watched:
    """How the watch of one interpreter ended: LOST says why py-spy gave no Python frames
    ("" when it did), GONE that the interpreter, a child of the command, ended first."""

    lost: str = ""
    gone: bool = False


class _Gone(Exception):
    pass


def watch_command(
    target: Target, spy: SpyRun, label: str, pid: int, lenient: bool = False
) -> Watched:
    """Until the command ends (py-spy then writes its output), or the interpreter PID
    when it is the command's child (`uv run` starts one to ask it its version before
    the one that runs the script). When py-spy fails on PID the command is stopped at
    once, as nothing can be recorded; LENIENT (perf records the native frames
    meanwhile) only when the failure is fatal."""
    watched = Watched()

    def check() -> None:
        if pid != target.pid and not Target(pid).alive():
            raise _Gone
        if watched.lost or spy.proc.poll() in (None, 0):
            return
        line, fatal = spy_failure(spy, pid, label)
        if fatal or not lenient:
            target.abort()
            raise UserError(line)
        watched.lost = line

    try:
        target.wait(None, tick=check, interval=0.02)
    except _Gone:
        watched.gone = True
    finally:
        stop_spy(spy)
    return watched


def _record_pid(tool: str, pid: int, duration: float, rate: int, workdir: Path) -> Recording:
    check_pid(pid)
    pid = interpreter_in(pid) or pid
    started = time.monotonic()
    spy = start_spy(tool, pid, rate, duration, workdir / "py-spy.txt")
    stopped = wait_spy(spy, pid, duration)
    elapsed = time.monotonic() - started
    recording = _recording(tool, spy, pid, rate, elapsed, None, f"process {pid}")
    note_end(spy, pid, elapsed, duration, recording.profile.num_samples, stopped)
    return recording


def wait_spy(spy: SpyRun, pid: int, duration: float) -> bool:
    """Wait for py-spy recording PID to end (at its --duration, or as the process
    exits), stopped if it runs on; True when Ctrl-C ended it (it keeps what it has)."""
    try:
        limit = duration + SPY_EXIT_TIMEOUT_S
        return wait_attached(spy.proc, pid, duration, limit, same_group=False, ready=spy.sampling)
    except subprocess.TimeoutExpired:
        stop_spy(spy, timeout=0)
        return False


def note_end(
    spy: SpyRun, pid: int, elapsed: float, duration: float, samples: int, stopped: bool
) -> None:
    if stopped:
        say_stopped(pid, elapsed, duration)
    else:
        note_exit(spy, pid, elapsed, duration, samples)


def note_exit(spy: SpyRun, pid: int, elapsed: float, duration: float, samples: int) -> None:
    """Say so when a --pid process exited before the DURATION asked for."""
    if "process exited" in spy.failure():
        print(
            f"perfsleuth: process {pid} exited after {elapsed:.1f} s of the {duration:g} s; "
            f"kept the {samples} samples taken until then",
            file=sys.stderr,
        )


def start_spy(
    tool: str, pid: int, rate: int, duration: float | None, out: Path, trace: bool = False
) -> SpyRun:
    """py-spy recording PID into OUT, its messages in OUT with a .log suffix: mixed
    stacks (raw), or with TRACE Python stacks only and when each began (chrometrace),
    without ever stopping the process."""
    log = out.with_suffix(".log")
    how = ["--nonblocking", "--format", "chrometrace"] if trace else ["--native", "--format", "raw"]
    argv = [tool, "record", *how, "--threads", "--full-filenames"]
    argv += ["--rate", str(rate), "-o", str(out), "--pid", str(pid)]
    if duration is not None:
        argv += ["--duration", str(max(1, round(duration)))]
    with log.open("wb") as sink:
        # its own session: Ctrl-C reaches the target only, py-spy stops when it exits
        proc = spawn(
            argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True
        )
    return SpyRun(out=out, log=log, proc=proc)


def stop_spy(spy: SpyRun, timeout: float = SPY_EXIT_TIMEOUT_S) -> None:
    """Wait for py-spy to notice the target is gone and write its output."""
    try:
        spy.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        spy.proc.send_signal(signal.SIGINT)  # py-spy writes what it has on Ctrl-C
        spy.proc.wait(timeout=SPY_EXIT_TIMEOUT_S)


def _recording(
    tool: str,
    spy: SpyRun,
    pid: int,
    rate: int,
    duration: float,
    exit_status: int | None,
    label: str,
) -> Recording:
    if not spy.out.exists() or spy.out.stat().st_size == 0:
        raise UserError(failure_line(spy, pid, label))
    profile = py_spy.read(spy.out, freq=rate)
    meta = {"recorder": "py-spy", "freq": rate, **spy_facts(tool, spy)}
    return Recording(profile, exit_status=exit_status, duration_s=duration, meta=meta)


def spy_facts(tool: str, spy: SpyRun) -> dict:
    """py-spy's version and, when it says, how many samples it failed to read."""
    facts: dict = {"py_spy": _version(tool)}
    summary = SUMMARY.search(spy.failure())
    if summary:
        facts["py_spy_errors"] = int(summary["errors"])
    return facts


def _version(tool: str) -> str:
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().removeprefix("py-spy ")


def spy_failure(spy: SpyRun, pid: int, label: str) -> tuple[str, bool]:
    """py-spy's failure in one line, and whether it is fatal to a recording with perf
    beside it: not when perf still samples a CPython process py-spy cannot read (a
    version it does not know, Yama's ptrace_scope, which stops py-spy's reads but not
    perf), whose native frames are then kept."""
    line = failure_line(spy, pid, label)
    if "exited before any sample" in line or not is_cpython(pid):
        return line, True
    if "permission denied" in line:
        return line, "kernel.yama.ptrace_scope" not in line
    if "is not a CPython interpreter" in line:
        line = (
            f"py-spy finds no CPython it can read in {_who(pid, label)}, though its name or "
            "its libpython says it is one (a libpython under another name, an interpreter "
            "stripped of its symbols, a version newer than py-spy); try `pip install -U py-spy`"
        )
    return line, False


def _who(pid: int, label: str) -> str:
    return label if label == f"process {pid}" else f"{label} (pid {pid})"


def failure_line(spy: SpyRun, pid: int, label: str) -> str:
    """py-spy's failure, as one line saying what to do."""
    text = spy.failure()
    who = _who(pid, label)
    if "permission denied" in text.lower() or "Operation not permitted" in text:
        return f"cannot read {who}: permission denied; {ptrace_hint(pid)}"
    version = re.search(r"Unsupported version of Python: (\S+)", text)
    if version:
        return f"{who} runs CPython {version[1]}, which py-spy cannot read; it reads {SUPPORTED}"
    if "Failed to find python version" in text or "Failed to find a python interpreter" in text:
        return (
            f"{who} is not a CPython interpreter py-spy can read ({SUPPORTED}); "
            "use --mode cpu for other programs"
        )
    if "process exited" in text or "Failed to get process executable name" in text:
        return f"{who} exited before any sample was taken; nothing recorded"
    first = next((ln for ln in text.splitlines() if ln.startswith("Error:")), "no output")
    return f"py-spy failed on {who}: {first.removeprefix('Error: ')}"


def ptrace_hint(pid: int, yama: Path = YAMA) -> str:
    """Why reading PID's memory may be refused, most specific first."""
    try:
        scope = int(yama.read_text().strip())
    except (OSError, ValueError):
        scope = 0
    if scope >= 1:
        return (
            f"kernel.yama.ptrace_scope is {scope}: only root or CAP_SYS_PTRACE may read a "
            "process that is not one's own child; run as root, or "
            "`sudo sysctl kernel.yama.ptrace_scope=0`"
        )
    owner = _owner(pid)
    if owner is not None and owner != os.geteuid():
        return f"it belongs to uid {owner}: run perfsleuth as that user or as root"
    return (
        "the process made itself non-dumpable (prctl PR_SET_DUMPABLE 0, or it changed its "
        "uid); run perfsleuth as root or with CAP_SYS_PTRACE"
    )


def _owner(pid: int) -> int | None:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return None
