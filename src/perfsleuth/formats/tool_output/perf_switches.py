"""`perf script --show-switch-events` of sched:sched_switch samples -> off-CPU records.

perfsleuth's fallback when bpftrace is missing records, for the target's threads,
`perf record -e sched:sched_switch --switch-events --call-graph dwarf` and prints
it with `perf script -F comm,tid,pid,time,event,trace,ip,sym,dso
--show-switch-events` (perf 6.1):

    prodcons  9294/9294   4838.874980: sched:sched_switch: prev_comm=prodcons prev_pid=9294 \
prev_prio=120 prev_state=S ==> next_comm=prodcons next_pid=9297 next_prio=120
    \t ffffffff8144ea56 futex_do_wait ([kernel.kallsyms])
    \t            8612b futex_wait (inlined)
    \t            8612b __GI___lll_lock_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)
    <blank line>
    prodcons  9294/9294   4838.875993: PERF_RECORD_SWITCH IN

A thread leaves the CPU at its sched_switch sample (its stack is where it
blocked) and is back at its next `PERF_RECORD_SWITCH IN`; the time between is
its off-CPU time there. Stacks are leaf first; inlined frames come before the
physical frame whose DSO they share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...model.profile import Frame
from ...symbols import dso_name

HEADER = re.compile(
    r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s+(?P<rest>.*)$"
)
PREV_STATE = re.compile(r"prev_state=(?P<state>\S+)")
FRAME = re.compile(r"^\s+(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


@dataclass(frozen=True)
class Switch:
    pid: int
    tid: int
    comm: str
    kernel_state: str  # R (preempted), S, D, ...
    frames: tuple[Frame, ...]  # leaf first
    ns: int


def parse(lines: Iterable[str]) -> Iterator[Switch]:
    """Off-CPU intervals: each sched_switch sample paired with its thread's next
    switch-in. A thread still off the CPU when the recording ends is left out."""
    pending: dict[int, tuple[float, int, str, str, list[str]]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith(("\t", " ")) and current is not None and FRAME.match(line):
            current.append(line)
            continue
        m = HEADER.match(line)
        if m is None:
            current = None
            continue
        tid, time_s, rest = int(m["tid"]), float(m["time"]), m["rest"]
        if rest.startswith("sched:sched_switch:"):
            state = PREV_STATE.search(rest)
            current = []
            pending[tid] = (time_s, int(m["pid"]), m["comm"], _letter(state), current)
        elif rest.startswith("PERF_RECORD_SWITCH IN") and tid in pending:
            out_s, pid, comm, letter, frame_lines = pending.pop(tid)
            yield Switch(pid, tid, comm, letter, frames(frame_lines), round((time_s - out_s) * 1e9))
            current = None
        else:
            current = None


def _letter(state: re.Match | None) -> str:
    return state["state"][0] if state else "S"


def frames(lines: list[str]) -> tuple[Frame, ...]:
    """Frames of one sample. perf prints an address's inline chain as several
    lines, marked "(inlined)" but for the one naming the DSO (first or last,
    depending on where the names come from); each group of lines at one address
    becomes an inline chain in perfsleuth's form: all frames but the last inlined,
    all in the group's DSO (that of the frame it called when none is named)."""
    groups: list[tuple[str, list[str], str]] = []  # (address, names, dso)
    for m in filter(None, map(FRAME.match, lines)):
        if groups and groups[-1][0] == m["addr"]:
            address, names, dso = groups[-1]
        else:
            address, names, dso = m["addr"], [], ""
            groups.append((address, names, dso))
        names.append(m["sym"].split("+0x", 1)[0] or "[unknown]")
        if m["dso"] != "inlined":
            groups[-1] = (address, names, m["dso"])
    out: list[Frame] = []
    previous = ""
    for i, (_address, names, dso) in enumerate(groups):
        # a group named only "(inlined)": take the DSO of the frame it called
        dso = dso or previous or next((d for _a, _n, d in groups[i + 1 :] if d), "")
        previous = dso
        kernel = dso.startswith("[kernel")
        shown = dso_name(dso) if dso else ""
        for depth, name in enumerate(names):
            out.append(Frame(name, dso=shown, inlined=depth < len(names) - 1, kernel=kernel))
    return tuple(out)
