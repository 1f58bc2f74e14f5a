"""The process a recorder watches: started held at a gate, or attached by PID.

Tracers that attach to a PID (bpftrace, perf -p, eu-stack) must be ready before
the program's first instruction, so a command is started behind a gate: a shell
that waits on a pipe and then execs the command in place, keeping its PID. The
target's stdin, stdout and stderr are the terminal's; Ctrl-C reaches it (and
not the tracers, which run in their own sessions and are stopped by us after
the target is gone, so nothing recorded is lost).

Signals (docs/recording.md, Signals): while the target runs, SIGINT, SIGTERM and
SIGHUP sent to perfsleuth are forwarded to it, and the run ends as the target
does; at any other moment they end perfsleuth (Terminated) with nothing stored.
Every child dies with perfsleuth (PR_SET_PDEATHSIG), even on SIGKILL, and a
sweeper process removes the recording's temporary folder whatever ends us.

ProcessMaps keeps the memory maps of the target and its children while they
live, so addresses recorded by a tracer can be symbolized after they exit.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import callgraph_mode

GATE = 'read _ <&{fd}; exec {fd}<&-; exec "$@"'
EXEC_TIMEOUT_S = 5.0
MAPS_INTERVAL_S = 0.25
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ENDING = (signal.SIGTERM, signal.SIGHUP)  # SIGINT already raises KeyboardInterrupt
PR_SET_PDEATHSIG = 1
SI_KERNEL = 0x80  # si_code of a signal the terminal sent to its whole foreground group
PF_KTHREAD = 0x00200000  # /proc/PID/stat's flags: a kernel thread (include/linux/sched.h)
SWEEPER = 'read _; rm -rf -- "$1"'


def next_signal(signals: Sequence[int], interval: float) -> Any:
    """The siginfo of one of these (blocked) signals sent by the end of interval s, or
    None. Not sigtimedwait(signals, interval): a process stopped and continued in its
    wait (Ctrl-Z then fg, a SIGSTOP) gets EINTR, and CPython's sigtimedwait, finding the
    time up, returns the siginfo it never filled: si_signo 437918234 (os.kill's EINVAL,
    a traceback that ended the recording: 2 of 3 wall runs of xz and lotpipe while a
    session beside stopped and continued processes) or 2, a SIGINT nobody sent,
    forwarded to the target. With no time to wait, no stop can interrupt it."""
    time.sleep(interval)
    return signal.sigtimedwait(signals, 0)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP ended perfsleuth outside the target's run: like Ctrl-C
    (a BaseException, so no `except Exception` swallows it), exit 128+signal."""

    def __init__(self, signo: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signo).name}; nothing stored")
        self.exit_status = 128 + signo


def say_stopped(pid: int, elapsed: float, duration: float | None) -> None:
    asked = f" of the {duration:g} s asked for" if duration else ""
    print(
        f"perfsleuth: Ctrl-C ended the recording of process {pid} after {elapsed:.1f} s"
        f"{asked}; kept what was recorded until then",
        file=sys.stderr,
    )


def say_recording(pid: int, duration: float | None) -> None:
    """Say when recording begins: attaching takes up to a second or two (bpftrace
    compiles its program, py-spy reads the interpreter), as py-spy does."""
    span = f"for {duration:g} s" if duration else "until it exits"
    print(
        f"perfsleuth: recording process {pid} {span}; Ctrl-C ends it sooner",
        file=sys.stderr,
        flush=True,
    )


def wait_attached(
    proc: subprocess.Popen,
    pid: int,
    duration: float | None,
    timeout: float | None = None,
    *,
    same_group: bool,
    ready: Callable[[], bool] = lambda: True,
) -> bool:
    """Wait for a recorder PROC attached to PID (perf -p, py-spy --pid); a SIGINT sent
    to us meanwhile is passed on to it, and it writes what it has. The terminal's
    Ctrl-C already reached a PROC of our process group (SAME_GROUP): that one is not
    sent twice. Recording is said to begin once READY() is true. True when a SIGINT
    came; subprocess.TimeoutExpired after TIMEOUT s."""
    deadline = None if timeout is None else time.monotonic() + timeout
    interrupted = said = False
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    try:
        while proc.poll() is None:
            if not said and ready():
                say_recording(pid, duration)
                said = True
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
            info = next_signal([signal.SIGINT], 0.1)
            if info is None:
                continue
            interrupted = True
            if not (same_group and info.si_code == SI_KERNEL):
                proc.send_signal(signal.SIGINT)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    return interrupted


def _raise_terminated(signo: int, _frame: Any) -> None:
    raise Terminated(signo)


def _die_with(parent: int, death_signal: int) -> None:
    """In the child before exec: get death_signal when perfsleuth dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, death_signal)
    if os.getppid() != parent:  # perfsleuth died before prctl: the signal would never come
        os._exit(1)


def spawn(argv: list[str], death_signal: int = signal.SIGKILL, **kwargs: Any) -> subprocess.Popen:
    """subprocess.Popen of a child that never outlives perfsleuth: it gets death_signal
    when perfsleuth dies (SIGTERM for one that must undo something first)."""
    die_with = functools.partial(_die_with, os.getpid(), death_signal)
    return subprocess.Popen(argv, preexec_fn=die_with, **kwargs)


@contextmanager
def recording_dir() -> Iterator[Path]:
    """A temporary folder for one recording, removed on every exit path: by us when
    we can, else by a sweeper that waits for our end of a pipe to close (a SIGKILL
    included). SIGTERM and SIGHUP raise Terminated meanwhile, so cleanup runs."""
    previous = {s: signal.signal(s, _raise_terminated) for s in ENDING}
    workdir = Path(tempfile.mkdtemp(prefix="perfsleuth-"))
    read_end, write_end = os.pipe()
    sweeper = subprocess.Popen(
        ["/bin/sh", "-c", SWEEPER, "perfsleuth-sweeper", str(workdir)],
        stdin=read_end,
        start_new_session=True,  # Ctrl-C and group signals must not stop it first
    )
    os.close(read_end)
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        os.close(write_end)
        sweeper.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)


@dataclass
class Target:
    pid: int
    proc: subprocess.Popen | None = None  # None when attached to a running process
    _gate: int | None = None

    @classmethod
    def launch(cls, cmd: list[str]) -> Target:
        check_command(cmd)
        read_end, write_end = os.pipe()
        proc = spawn(
            [_gate_shell(read_end), "-c", GATE.format(fd=read_end), "perfsleuth", *cmd],
            pass_fds=(read_end,),
        )
        os.close(read_end)
        return cls(pid=proc.pid, proc=proc, _gate=write_end)

    @classmethod
    def attach(cls, pid: int) -> Target:
        check_pid(pid)
        return cls(pid=pid)

    @classmethod
    def of(cls, cmd: list[str], pid: int | None) -> Target:
        """CMD launched, or else the running process PID attached."""
        if cmd:
            return cls.launch(cmd)
        if pid is None:
            raise UserError("give a command to record, or --pid P")
        return cls.attach(pid)

    def release(self) -> None:
        """Let a launched command start, and wait until it has replaced the gate
        shell, so the first thing sampled is the command (no-op when attached)."""
        if self._gate is None:
            return
        gate = _cmdline_of(self.pid)  # not the exe: the command may be a shell too
        os.write(self._gate, b"go\n")
        os.close(self._gate)
        self._gate = None
        deadline = time.monotonic() + EXEC_TIMEOUT_S
        while self.alive() and _cmdline_of(self.pid) == gate and time.monotonic() < deadline:
            time.sleep(0.001)

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _state_of(self.pid) != "Z"

    def wait(
        self,
        duration: float | None,
        tick: Callable[[], None] | None = None,
        interval: float = 0.1,
    ) -> None:
        """Until the target exits (or `duration` seconds pass), calling tick() now and
        then. A launched target gets the signals sent to us meanwhile. An attached
        process is not ours to signal: Ctrl-C (SIGINT) ends the recording, which is
        kept, as `perf record -p` does; SIGTERM or SIGHUP ends perfsleuth (Terminated)."""
        started = time.monotonic()
        deadline = started + duration if duration else None
        stopped = False
        # Blocked and taken with sigtimedwait, which says who sent each one. Every
        # child is started by now: a child would inherit the mask.
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
        try:
            if self.proc is None:
                say_recording(self.pid, duration)
            while (
                not stopped and self.alive() and (deadline is None or time.monotonic() < deadline)
            ):
                if tick is not None:
                    tick()
                stopped = self._forward(next_signal(FORWARDED, interval))
        finally:
            late = signal.sigtimedwait(FORWARDED, 0)  # sent as the wait ended
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        if late is not None and self.proc is None:
            stopped = self._forward(late) or stopped
        if self.proc is None:
            self._say_how_it_ended(time.monotonic() - started, duration, stopped)

    def _say_how_it_ended(self, elapsed: float, duration: float | None, stopped: bool) -> None:
        if stopped:
            say_stopped(self.pid, elapsed, duration)
        elif duration and not self.alive():
            print(
                f"perfsleuth: process {self.pid} exited after {elapsed:.1f} s of the "
                f"{duration:g} s asked for; kept what was recorded until then",
                file=sys.stderr,
            )

    def _forward(self, info: Any) -> bool:
        """Pass on a signal; True when it was Ctrl-C ending an attached recording."""
        if info is None:
            return False
        if self.proc is None:
            if info.si_signo in ENDING:
                raise Terminated(info.si_signo)
            return True
        # The terminal's Ctrl-C reached the target with us (one process group): once is enough.
        if info.si_code != SI_KERNEL and self.alive():
            os.kill(self.pid, info.si_signo)
        return False

    def abort(self) -> None:
        """Kill a launched command that never got past the gate."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._gate is not None:
            os.close(self._gate)
            self._gate = None

    @property
    def exit_status(self) -> int | None:
        if self.proc is None:
            return None
        status = self.proc.wait()
        return 128 - status if status < 0 else status


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
    name, state, flags = _stat_of(pid)
    if state == "Z":
        raise UserError(f"process {pid} ({name}) has exited (a zombie its parent has not reaped)")
    if flags & PF_KTHREAD:
        raise UserError(
            f"process {pid} ({name}) is a kernel thread: it runs no program to record; "
            "`perf record -a -g` samples the kernel"
        )


def _stat_of(pid: int) -> tuple[str, str, int]:
    """(name, scheduler state, flags) from /proc/PID/stat; ("", "", 0) when it is gone.
    A zombie's recording failed in each mode its own way (all mode: "perf record -p did
    not start ... run as root"), a kernel thread's too (kthreadd: "the program ran too
    briefly")."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            head, _, rest = fh.read().rpartition(")")
        fields = rest.split()
        return head.partition("(")[2], fields[0], int(fields[6])
    except (OSError, IndexError, ValueError):
        return "", "", 0


def _gate_shell(fd: int) -> str:
    """dash, /bin/sh on Debian, reads no descriptor above 9 in a redirection (`<&12`
    is "Bad fd number"); bash does. A process with many files open (a test runner)
    gets such a pipe."""
    return "/bin/sh" if fd < 10 else shutil.which("bash") or "/bin/sh"


def _cmdline_of(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _state_of(pid: int) -> str:
    return _stat_of(pid)[1]


def running(pid: int) -> bool:
    """The process exists and has not exited (a zombie has)."""
    return _state_of(pid) not in ("", "Z")


def children_of(pid: int) -> list[int]:
    """Child processes of pid: from /proc/PID/task/*/children, or, on kernels built
    without it, from every process's parent in /proc/*/stat."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                out.extend(int(c) for c in fh.read().split())
        except FileNotFoundError:
            return _children_by_parent(pid)
        except (OSError, ValueError):
            continue
    return out


def _children_by_parent(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry))
    return out


@dataclass(frozen=True, order=True)
class Mapping:
    start: int
    end: int
    offset: int
    path: str


@dataclass
class ProcessMaps:
    """Executable file mappings of a process tree, remembered after it exits."""

    root: int
    maps: dict[int, list[Mapping]] = field(default_factory=dict)
    _first: float = 0.0
    _next: float = 0.0

    def tick(self) -> None:
        """Snapshot now and then: often right after start, while the dynamic loader
        maps libraries, then every MAPS_INTERVAL_S (reading maps takes the
        target's mmap lock, so not too often)."""
        now = time.monotonic()
        if now < self._next:
            return
        self._first = self._first or now
        self.snapshot()
        self._next = now + min(MAPS_INTERVAL_S, 0.005 + (now - self._first) / 2)

    def snapshot(self) -> None:
        pending = [self.root]
        seen: set[int] = set()
        while pending:
            pid = pending.pop()
            if pid in seen:
                continue
            seen.add(pid)
            mappings = read_maps(pid)
            if mappings:
                self.maps[pid] = sorted(set(self.maps.get(pid, [])) | set(mappings))
            pending.extend(children_of(pid))

    def dsos(self) -> list[dict]:
        """{"path", "build_id"} of every file mapped executable, as RunInfo.dsos."""
        paths = {m.path for mappings in self.maps.values() for m in mappings}
        return [{"path": p, "build_id": ""} for p in sorted(paths) if p.startswith("/")]

    def lookup(self, pid: int, address: int) -> Mapping | None:
        mappings = self.maps.get(pid) or self.maps.get(self.root) or []
        i = bisect.bisect_right(mappings, Mapping(address, 2**64, 2**64, "")) - 1
        while i >= 0:
            m = mappings[i]
            if m.start <= address < m.end:
                return m
            if m.end <= address:
                return None
            i -= 1
        return None


def read_maps(pid: int) -> list[Mapping]:
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return [m for m in map(parse_maps_line, lines) if m is not None]


def parse_maps_line(line: str) -> Mapping | None:
    """One executable, file-backed (or [vdso]) line of /proc/PID/maps."""
    parts = line.split(maxsplit=5)
    if len(parts) < 6 or "x" not in parts[1]:
        return None
    path = parts[5].strip()
    if not (path.startswith("/") or path == "[vdso]"):
        return None
    start, _, end = parts[0].partition("-")
    try:
        return Mapping(int(start, 16), int(end, 16), int(parts[2], 16), path)
    except ValueError as e:
        raise UserError(f"unreadable line in /proc maps: {line!r}") from e


def stop(
    proc: subprocess.Popen,
    sig: int = signal.SIGINT,
    timeout: float = 30.0,
    again: int | None = None,
    every: float = 1.0,
) -> int:
    """Ask a tracer we started to finish and wait for it; kill it if it hangs. AGAIN: a
    signal sent EVERY seconds meanwhile, for a tracer that may miss SIG (bpftrace)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                return proc.wait(min(every, left) if again else left)
            except subprocess.TimeoutExpired:
                if again:
                    proc.send_signal(again)
        proc.kill()
    return proc.wait()
