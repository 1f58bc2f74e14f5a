"""Per-call memory traces of one function, from valgrind: cache mode's own tool
(fntrace, collect/fntrace.py), or lackey where that tool cannot be built.

A call's extent is the same for both:

- a call starts when the instruction at FUNC's entry address executes; its return
  address is where the call that entered it returns to;
- the call ends when the return address executes (nested entries, i.e. recursion,
  push their own return address), so callees, including library code, count.

A function entered by a jump (a tail call) has no return address of its own: its
extent then ends with its caller's. Valgrind loads a position-independent
executable at a fixed base (VALGRIND_PIE_BASE), which maps runtime addresses back
to the ELF's.

fntrace cuts the calls itself and writes binary records of their accesses only.
Lackey (`--trace-mem=yes`) prints every instruction fetch and data access of the
whole program, with no per-function switch; its log is cut here (ExtentCutter):
the instruction fetched just before the entry is the call, so its address plus its
length is the return address.

The cost is bounded two ways: access records are kept for the first `max_calls`
calls, and unless `run_to_end` is set the program is stopped once those are in.
Totals (calls, accesses, distinct cache lines, and an optional observer such as a
cache model) cover every call until the program stops.

With fntrace, calls can be sampled instead (`sample_every`): 1 in k calls, k fixed
(the program stopped once max_calls are in), or SAMPLE_AUTO, where the tool doubles
k as the run goes on, so the calls kept (max_calls to twice that) spread over the
whole run, which is bounded by `budget_s` seconds instead. The totals then cover
the traced calls; `total_calls` counts every call seen.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..binaries import binary_at
from ..errors import UserError
from ..model.progress import SILENT, Progress
from . import fntrace
from .target import read_maps, spawn
from .traced_calls import CallCounter, DataObserver, TracedCalls
from .valgrind import FAILURE_MARKERS, FIXED_ENV, resolve_program, valgrind_binary

VALGRIND_PIE_BASE = 0x108000
READ_SIZE = 1 << 20
VALGRIND_MESSAGE = re.compile(r"^==\d+== (.*)$", re.M)
MAX_MESSAGES = 50  # valgrind's own lines kept, to say why a run failed
SAMPLE_AUTO = fntrace.AUTO
# valgrind's own files in its process's maps, by name: its preloads and the tool
# (lackey-amd64-linux, fntrace-amd64-linux), wherever the tool's folder is
VALGRIND_FILE = re.compile(r"^(vgpreload_.*\.so|[a-z]+-amd64-linux)$")
__all__ = ["DataObserver", "ExtentCutter", "Target", "TracedCalls", "record"]


@dataclass
class Target:
    executable: str
    function: str
    start: int  # ELF virtual address of the entry
    base: int  # runtime address = ELF address + base


def load_base(executable: str) -> int:
    binary = binary_at(executable)
    if binary is None:
        raise UserError(f"{executable} is not an ELF executable")
    return VALGRIND_PIE_BASE if binary.position_independent else 0


def lackey_argv(cmd: list[str], executable: str, log_fd: int) -> list[str]:
    program = cmd[0] if "/" in cmd[0] else executable
    return [
        valgrind_binary(),
        "--tool=lackey",
        "--trace-mem=yes",
        "--basic-counts=no",
        f"--log-fd={log_fd}",
        "--",
        program,
        *cmd[1:],
    ]


def record(
    cmd: list[str],
    target: Target,
    *,
    max_calls: int,
    run_to_end: bool = False,
    line_size: int = 64,
    observer: DataObserver | None = None,
    keep_env: bool = False,
    extra_env: dict[str, str] | None = None,
    stdin_text: str | None = None,
    progress: Progress = SILENT,
    sample_every: int = 1,
    budget_s: float | None = None,
) -> TracedCalls:
    """Run CMD under valgrind and cut its trace to the calls of target.function;
    `progress` counts the calls kept (up to max_calls); the program is stopped after
    budget_s seconds."""
    resolve_program(cmd)
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):  # fewer stalls of valgrind on a full pipe
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, READ_SIZE)
    env = (dict(os.environ) if keep_env else dict(FIXED_ENV)) | (extra_env or {})
    tool = fntrace.tool_dir()
    with tempfile.TemporaryDirectory(prefix="perfsleuth-trace-") as scratch:
        log_file = str(Path(scratch) / "valgrind.log")
        cutter: CallCounter
        if tool is not None:
            program = cmd[0] if "/" in cmd[0] else target.executable
            entry = target.start + target.base
            auto = sample_every == SAMPLE_AUTO
            flushed = 0 if run_to_end and not auto else max_calls
            # every call of the run is recorded, but only the first max_calls are kept
            brief = max_calls if run_to_end and sample_every == 1 else -1
            argv = fntrace.argv(
                program, cmd[1:], entry, write_fd, log_file, flushed, sample_every, brief
            )
            env["VALGRIND_LIB"] = tool
            stop = not (run_to_end or auto)
            cutter = fntrace.RecordCutter(max_calls, line_size, observer, stop)
        else:
            argv = lackey_argv(cmd, target.executable, write_fd)
            cutter = ExtentCutter(target, max_calls, line_size, observer, not run_to_end)
        started = time.monotonic()
        deadline = None if budget_s is None else started + budget_s
        status = _run(argv, env, (read_fd, write_fd), stdin_text, cutter, progress, deadline)
        messages = _messages(log_file, cutter)
    recording = cutter.recording
    recording.tracer = "fntrace" if tool is not None else "lackey"
    if tool is not None and sample_every != 1:
        recording.chosen = "auto" if sample_every == SAMPLE_AUTO else "fixed"
    recording.duration_s = time.monotonic() - started
    recording.out_of_time = deadline is not None and status < 0 and time.monotonic() >= deadline
    stopped_full = cutter.full and cutter.stop_when_full
    recording.stopped_early = status < 0 and (stopped_full or recording.out_of_time)
    recording.exit_status = None if recording.stopped_early else status
    if recording.total_calls == 0 and status != 0:
        reason = next((m for m in messages if any(k in m for k in FAILURE_MARKERS)), "")
        if reason:
            raise UserError(f"valgrind could not run {cmd[0]}: {reason}")
    return recording


def _run(
    argv: list[str],
    env: dict[str, str],
    pipe: tuple[int, int],
    stdin_text: str | None,
    cutter: CallCounter,
    progress: Progress,
    deadline: float | None,
) -> int:
    """Start the tracer, feed the cutter until the trace ends, it is full or the
    deadline passes (the program is then stopped); the exit status."""
    read_fd, write_fd = pipe
    stdin = subprocess.PIPE if stdin_text is not None else None
    proc = spawn(argv, env=env, pass_fds=(write_fd,), stdin=stdin, text=True)
    os.close(write_fd)
    if proc.stdin is not None:
        proc.stdin.write(stdin_text or "")
        proc.stdin.close()
    with os.fdopen(read_fd, "rb", buffering=0) as log:
        while (chunk := _read_until(log, deadline)) is not None and chunk:
            kept = min(len(cutter.recording.calls), cutter.max_calls)
            full = cutter.feed(chunk)
            if not cutter.recording.objects and cutter.recording.calls:
                cutter.recording.objects = code_objects(proc.pid)
            progress.advance(min(len(cutter.recording.calls), cutter.max_calls) - kept)
            if full:
                break
        if chunk != b"":
            proc.kill()
    return proc.wait()


def code_objects(pid: int) -> list[tuple[int, int, int, str]]:
    """The guest's file-backed code mappings in valgrind's process (its own tool and
    preloads left out); empty once the process has exited."""
    return [
        (m.start, m.end, m.offset, m.path)
        for m in read_maps(pid)
        if m.path.startswith("/") and not VALGRIND_FILE.match(os.path.basename(m.path))
    ]


def _read_until(log: io.FileIO, deadline: float | None) -> bytes | None:
    """The next block of the trace; None once the deadline has passed."""
    if deadline is not None:
        ready, _, _ = select.select([log], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
    return log.read(READ_SIZE)


def _messages(log_file: str, cutter: CallCounter) -> list[str]:
    """Valgrind's own lines: in lackey's log, or in fntrace's log file."""
    if isinstance(cutter, ExtentCutter):
        return cutter.messages
    with contextlib.suppress(OSError):
        return VALGRIND_MESSAGE.findall(Path(log_file).read_text(errors="replace"))[:MAX_MESSAGES]
    return []


class ExtentCutter(CallCounter):
    """Feeds on lackey's log lines; keeps the accesses inside the function's calls."""

    def __init__(
        self,
        target: Target,
        max_calls: int,
        line_size: int,
        observer: DataObserver | None,
        stop_when_full: bool = True,
    ) -> None:
        super().__init__(max_calls, line_size, observer, stop_when_full)
        self.entry = f"I  {target.start + target.base:08x},"
        self.returns: list[int] = []  # return addresses of the nested calls in progress
        self.previous = ""  # the last instruction line seen outside the function
        self.messages: list[str] = []  # valgrind's own lines (==pid== ...)
        self.pending = ""

    def feed(self, chunk: bytes) -> bool:
        """A block of the log as read, cut at its last whole line."""
        data = self.pending + chunk.decode("latin-1")
        cut = data.rfind("\n") + 1
        self.pending = data[cut:]
        return self.feed_block(data[:cut])

    def feed_block(self, block: str) -> bool:
        """Take whole log lines; True (with stop_when_full) once max_calls calls are
        complete, the rest of the block left unread. Outside the
        function only the entry and the last instruction line before it matter, so
        those stretches are searched, not walked line by line."""
        if not self.recording.total_calls and len(self.messages) < MAX_MESSAGES and "==" in block:
            self.messages += VALGRIND_MESSAGE.findall(block)[:MAX_MESSAGES]
        pos, size = 0, len(block)
        while pos < size:
            if not self.returns:
                at = self._next_entry(block, pos)
                self._remember_previous(block, pos, size if at < 0 else at)
                if at < 0:
                    return False
                pos = block.index("\n", at) + 1
                self._enter(block[at:pos])
                continue
            end = block.index("\n", pos) + 1
            if self._inside(block[pos:end]) and self.stop_when_full:
                return True
            pos = end
        return False

    def _next_entry(self, block: str, pos: int) -> int:
        at = block.find(self.entry, pos)
        while at > 0 and block[at - 1] != "\n":
            at = block.find(self.entry, at + 1)
        return at

    def _remember_previous(self, block: str, start: int, stop: int) -> None:
        """The last instruction line in block[start:stop], which starts at a line."""
        at = block.rfind("\nI", start, stop)
        at = at + 1 if at >= 0 else (start if block.startswith("I", start) and start < stop else -1)
        if at >= 0:
            self.previous = block[at : block.index("\n", at) + 1]

    def _enter(self, line: str) -> None:
        if not self.previous:
            return
        address, size = self.previous[3:].split(",")
        self.returns.append(int(address, 16) + int(size))
        self.start_call()
        address_text, size_text = line[3:].split(",")
        self.count_instruction(int(address_text, 16), int(size_text))

    def _inside(self, line: str) -> bool:
        kind = line[0] if line[0] == "I" else line[1]
        if kind not in "ILSM":
            return False
        address_text, size_text = line[3:].split(",")
        address, size = int(address_text, 16), int(size_text)
        if kind == "I":
            return self._instruction(line, address, size)
        self.count_data(kind, address, size)
        return False

    def _instruction(self, line: str, address: int, size: int) -> bool:
        if address == self.returns[-1]:
            self.returns.pop()
            if not self.returns:
                self.previous = line
                return self.end_call()
        elif line.startswith(self.entry):
            self.returns.append(self.pc + self.pc_size)
        self.count_instruction(address, size)
        return False
