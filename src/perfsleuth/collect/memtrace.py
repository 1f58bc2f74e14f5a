"""Per-call memory traces of one function, from valgrind's lackey tool.

Lackey (`--trace-mem=yes`) prints every instruction fetch and data access of the
whole program; valgrind offers no per-function switch for it, and cachegrind and
callgrind only keep totals. So lackey's log is streamed through a pipe and cut to
the function's dynamic extent here:

- a call starts when the instruction at FUNC's entry address executes; the
  instruction fetched just before it is the call, so its address plus its length
  is the return address;
- the call ends when the return address executes (nested entries, i.e. recursion,
  push their own return address), so callees, including library code, count.

A function entered by a jump (a tail call) has no return address of its own: its
extent then ends with its caller's. Valgrind loads a position-independent
executable at a fixed base (VALGRIND_PIE_BASE), which maps runtime addresses back
to the ELF's.

The cost is bounded two ways: access records are kept for the first `max_calls`
calls, and unless `run_to_end` is set the program is stopped once those are in.
Totals (calls, accesses, distinct cache lines, and an optional observer such as a
cache model) cover every call until the program stops.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..cpucache.trace import Access
from ..errors import UserError
from ..model.progress import SILENT, Progress
from .target import spawn
from .valgrind import FAILURE_MARKERS, FIXED_ENV, resolve_program, valgrind_binary

VALGRIND_PIE_BASE = 0x108000
READ_SIZE = 1 << 20
VALGRIND_MESSAGE = re.compile(r"^==\d+== (.*)$", re.M)
MAX_MESSAGES = 50  # valgrind's own lines kept, to say why a run failed
DataObserver = Callable[[int, int], None]  # (address, size) of each data access


@dataclass
class Target:
    executable: str
    function: str
    start: int  # ELF virtual address of the entry
    base: int  # runtime address = ELF address + base


@dataclass
class TracedCalls:
    """What one lackey run saw of the function: the accesses of its first calls, and
    totals over every call until the program stopped."""

    calls: list[list[Access]]  # access records of the first max_calls calls
    total_calls: int = 0
    instructions: int = 0
    loads: int = 0  # L and M accesses, over all calls
    stores: int = 0  # S and M accesses
    data_lines: set[int] = field(default_factory=set)
    code_lines: set[int] = field(default_factory=set)
    exit_status: int | None = None
    duration_s: float = 0.0
    stopped_early: bool = False


def load_base(executable: str) -> int:
    try:
        with open(executable, "rb") as fh:
            kind = ELFFile(fh).header["e_type"]
    except (OSError, ELFError) as e:
        raise UserError(f"{executable} is not an ELF executable ({e})") from e
    return VALGRIND_PIE_BASE if kind == "ET_DYN" else 0


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
    stdin_text: str | None = None,
    progress: Progress = SILENT,
) -> TracedCalls:
    """Run CMD under lackey and cut its trace to the calls of target.function;
    `progress` counts the calls kept."""
    resolve_program(cmd)
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):  # fewer stalls of valgrind on a full pipe
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, READ_SIZE)
    argv = lackey_argv(cmd, target.executable, write_fd)
    env = dict(os.environ) if keep_env else dict(FIXED_ENV)
    started = time.monotonic()
    stdin = subprocess.PIPE if stdin_text is not None else None
    proc = spawn(argv, env=env, pass_fds=(write_fd,), stdin=stdin, text=True)
    os.close(write_fd)
    if proc.stdin is not None:
        proc.stdin.write(stdin_text or "")
        proc.stdin.close()
    cutter = ExtentCutter(target, max_calls, line_size, observer, stop_when_full=not run_to_end)
    with os.fdopen(read_fd, "rb", buffering=READ_SIZE) as log:
        pending = ""
        while chunk := log.read(READ_SIZE):
            data = pending + chunk.decode("latin-1")
            cut = data.rfind("\n") + 1
            pending = data[cut:]
            kept = len(cutter.recording.calls)
            full = cutter.feed_block(data[:cut])
            progress.advance(len(cutter.recording.calls) - kept)
            if full:
                proc.kill()
                break
    status = proc.wait()
    recording = cutter.recording
    recording.duration_s = time.monotonic() - started
    recording.stopped_early = status < 0 and cutter.full
    recording.exit_status = None if recording.stopped_early else status
    if recording.total_calls == 0 and status != 0:
        reason = next((m for m in cutter.messages if any(k in m for k in FAILURE_MARKERS)), "")
        if reason:
            raise UserError(f"valgrind could not run {cmd[0]}: {reason}")
    return recording


class ExtentCutter:
    """Feeds on lackey's log lines; keeps the accesses inside the function's calls."""

    def __init__(
        self,
        target: Target,
        max_calls: int,
        line_size: int,
        observer: DataObserver | None,
        stop_when_full: bool = True,
    ) -> None:
        self.entry = f"I  {target.start + target.base:08x},"
        self.max_calls = max_calls
        self.stop_when_full = stop_when_full
        self.shift = line_size.bit_length() - 1
        self.observer = observer
        self.recording = TracedCalls(calls=[])
        self.returns: list[int] = []  # return addresses of the nested calls in progress
        self.previous = ""  # the last instruction line seen outside the function
        self.current: list[Access] | None = None
        self.pc, self.pc_size = 0, 0  # the last instruction inside the function
        self.messages: list[str] = []  # valgrind's own lines (==pid== ...)

    @property
    def full(self) -> bool:
        return len(self.recording.calls) >= self.max_calls

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
        rec = self.recording
        rec.total_calls += 1
        self.current = [] if len(rec.calls) < self.max_calls else None
        address_text, size_text = line[3:].split(",")
        self._count_instruction(int(address_text, 16), int(size_text))

    def _inside(self, line: str) -> bool:
        kind = line[0] if line[0] == "I" else line[1]
        if kind not in "ILSM":
            return False
        address_text, size_text = line[3:].split(",")
        address, size = int(address_text, 16), int(size_text)
        if kind == "I":
            return self._instruction(line, address, size)
        self._data(kind, address, size)
        return False

    def _instruction(self, line: str, address: int, size: int) -> bool:
        if address == self.returns[-1]:
            self.returns.pop()
            if not self.returns:
                return self._leave(line)
        elif line.startswith(self.entry):
            self.returns.append(self.pc + self.pc_size)
        self._count_instruction(address, size)
        return False

    def _count_instruction(self, address: int, size: int) -> None:
        self.pc, self.pc_size = address, size
        rec = self.recording
        rec.instructions += 1
        rec.code_lines.add(address >> self.shift)
        if self.current is not None:
            self.current.append(("I", address, size, address))

    def _data(self, kind: str, address: int, size: int) -> None:
        rec = self.recording
        if kind != "S":
            rec.loads += 1
        if kind != "L":
            rec.stores += 1
        first, last = address >> self.shift, (address + size - 1) >> self.shift
        rec.data_lines.add(first)
        if last != first:
            rec.data_lines.add(last)
        if self.observer is not None:
            self.observer(address, size)
        if self.current is not None:
            self.current.append((kind, address, size, self.pc))

    def _leave(self, line: str) -> bool:
        self.previous = line
        if self.current is not None:
            self.recording.calls.append(self.current)
            self.current = None
        return self.full
