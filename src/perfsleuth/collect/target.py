"""The process a recorder watches: started held at a gate, or attached by PID.

Tracers that attach to a PID (bpftrace, perf -p, eu-stack) must be ready before
the program's first instruction, so a command is started behind a gate: a shell
that waits on a pipe and then execs the command in place, keeping its PID. The
target's stdin, stdout and stderr are the terminal's; Ctrl-C reaches it (and
not the tracers, which run in their own sessions and are stopped by us after
the target is gone, so nothing recorded is lost).

ProcessMaps keeps the memory maps of the target and its children while they
live, so addresses recorded by a tracer can be symbolized after they exit.
"""

from __future__ import annotations

import bisect
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UserError
from . import perf

GATE = 'read _ <&{fd}; exec {fd}<&-; exec "$@"'
EXEC_TIMEOUT_S = 5.0
MAPS_INTERVAL_S = 0.25


@dataclass
class Target:
    pid: int
    proc: subprocess.Popen | None = None  # None when attached to a running process
    _gate: int | None = None

    @classmethod
    def launch(cls, cmd: list[str]) -> Target:
        perf.check_command(cmd)
        read_end, write_end = os.pipe()
        proc = subprocess.Popen(
            ["/bin/sh", "-c", GATE.format(fd=read_end), "perfsleuth", *cmd], pass_fds=(read_end,)
        )
        os.close(read_end)
        return cls(pid=proc.pid, proc=proc, _gate=write_end)

    @classmethod
    def attach(cls, pid: int) -> Target:
        perf.check_pid(pid)
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
        """Until the target exits (or `duration` seconds pass), calling tick() now and then."""
        deadline = time.monotonic() + duration if duration else None
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if self.proc else None
        try:
            while self.alive() and (deadline is None or time.monotonic() < deadline):
                if tick is not None:
                    tick()
                time.sleep(interval)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

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


def _cmdline_of(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _state_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


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


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
    """Ask a tracer we started to finish and wait for it; kill it if it hangs."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
