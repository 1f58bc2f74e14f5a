"""Output of wallsnap (collect/wall_snapshotter/wallsnap.c) -> snapshots.

One block per snapshot; the threads' stacks are in eu-stack's `-q -b -m` layout,
each thread preceded by its state at the stop (from its registers) and name:

    SNAPSHOT 56843717834050 2886368 18230
    STATE 16465 S 202 prodcons-measured
    PID 16464 - process
    TID 16465:
    #0  0x00007f85f64a4174 - /usr/lib/x86_64-linux-gnu/libc.so.6
        [93ac61ec...a40]@0x7f85f641e000+0x86174

A first line says how the snapshotter is woken at each snapshot's instant:
`WAKE realtime` (SCHED_FIFO), `WAKE short-slice` (the fair scheduler's shortest
slice) or `WAKE ordinary` (neither was allowed: on a busy machine it then runs when
one of the program's threads blocks, and its snapshots over-read waiting).

A thread in a futex call may have an OWNER line after its STATE: the tid in the
word 8 bytes past the futex word (a glibc mutex's holder; noise for anything else).
A thread blocked in a wait for events (poll, select, epoll_wait and their kin) has a
TIMEOUT line: the timeout it passed, in ms, -1 for none (it blocks until an event).
A thread stopped runnable in a read of a non-blocking socket, pipe or other file that
is no disk's has a NONBLOCKING line: the read could not wait.

SNAPSHOT gives the CLOCK_MONOTONIC instant the threads were interrupted, the ns
until the last was let go and the ns the pass that interrupted them took (long when
the snapshotter lost its CPU meanwhile: the later threads' instant is later). STATE
says whether the thread was blocked in a system call then (S) or not (R), the call's
number ("-": none) and the thread's name (which may hold spaces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from . import eu_stack

SNAPSHOT_LINE = re.compile(r"^SNAPSHOT (?P<time>\d+) (?P<held>\d+) (?P<pass>\d+)$", re.MULTILINE)
WAKE_LINE = re.compile(r"^WAKE (?P<how>[a-z-]+)$", re.MULTILINE)
STATE_LINE = re.compile(r"^STATE (?P<tid>\d+) (?P<state>[SR]) (?P<syscall>\d+|-) ?(?P<name>.*)$")
OWNER_LINE = re.compile(r"^OWNER (?P<tid>\d+) (?P<owner>\d+)$")
TIMEOUT_LINE = re.compile(r"^TIMEOUT (?P<tid>\d+) (?P<ms>-?\d+)$")
NONBLOCKING_LINE = re.compile(r"^NONBLOCKING (?P<tid>\d+)$")


@dataclass(frozen=True)
class ThreadState:
    state: str  # "S" inside a system call, "R" not
    syscall: int | None  # its number
    name: str
    owner: int = 0  # OWNER: the tid past the futex word it waits on, 0 when none
    timeout_ms: int | None = None  # TIMEOUT: a wait for events' timeout, -1 for none
    nonblocking: bool = False  # NONBLOCKING: in a read that could not wait


@dataclass
class WallSnapshot:
    time_ns: int
    held_ns: int
    pass_ns: int = 0
    states: dict[int, ThreadState] = field(default_factory=dict)
    threads: list[eu_stack.EuThread] = field(default_factory=list)


def parse(text: str) -> list[WallSnapshot]:
    """Every snapshot, in order; text before the first SNAPSHOT line is ignored."""
    heads = list(SNAPSHOT_LINE.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)] if heads else []
    snapshots = []
    for head, end in zip(heads, ends, strict=True):
        body = text[head.end() : end]
        snap = WallSnapshot(int(head["time"]), int(head["held"]), int(head["pass"]))
        snap.states = _states(body)
        snap.threads = eu_stack.parse(body)
        snapshots.append(snap)
    return snapshots


def wake(text: str) -> str | None:
    """How the snapshotter was woken (realtime, short-slice, ordinary); None when the
    output does not say (a wallsnap from before it did)."""
    found = WAKE_LINE.search(text)
    return found["how"] if found else None


def _states(body: str) -> dict[int, ThreadState]:
    out = {}
    for line in body.splitlines():
        if m := STATE_LINE.match(line):
            syscall = None if m["syscall"] == "-" else int(m["syscall"])
            out[int(m["tid"])] = ThreadState(m["state"], syscall, m["name"])
        elif (m := OWNER_LINE.match(line)) and int(m["tid"]) in out:
            out[int(m["tid"])] = replace(out[int(m["tid"])], owner=int(m["owner"]))
        elif (m := TIMEOUT_LINE.match(line)) and int(m["tid"]) in out:
            out[int(m["tid"])] = replace(out[int(m["tid"])], timeout_ms=int(m["ms"]))
        elif (m := NONBLOCKING_LINE.match(line)) and int(m["tid"]) in out:
            out[int(m["tid"])] = replace(out[int(m["tid"])], nonblocking=True)
    return out
