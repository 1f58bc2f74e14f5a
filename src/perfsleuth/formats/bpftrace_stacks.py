"""bpftrace JSON output (`bpftrace -f json`) of perfsleuth's off-CPU script -> records.

The script (collect/offcpu.py) keeps one map, printed when bpftrace stops:

    {"type": "map", "data": {"@offcpu": {"<key>": <ns>, ...}}}

where each key is `tgid,tid,prev_state,<kernel stack>,<user stack>,comm`: the
kernel stack one `symbol+offset` per line, the user stack one hex address per
line (BPFTRACE_NO_USER_SYMBOLS=1; perfsleuth symbolizes them itself, after the
process may have exited), both leaf first and each followed by a newline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import UserError

MAP_NAME = "@offcpu"
KEY = re.compile(
    r"^(?P<tgid>\d+),(?P<tid>\d+),(?P<state>\d+),(?P<kstack>(?:\n(?:[^\n]*\n)*?)?),"
    r"(?P<ustack>(?:\n(?:[^\n]*\n)*?)?),(?P<comm>.*)$",
    re.S,
)
# prev_state of sched_switch: 0 runnable (preempted); the TASK_REPORT_MAX bit
# (0x100 on current kernels) marks a preemption as well.
PREEMPTED_BIT = 0x100
STATE_LETTERS = {0: "R", 1: "S", 2: "D", 4: "T", 8: "t", 16: "X", 32: "Z", 64: "P", 128: "I"}


@dataclass(frozen=True)
class OffCpuRecord:
    tgid: int
    tid: int
    kernel_state: str  # /proc stat letter: R (preempted), S, D, ...
    kernel_stack: tuple[str, ...]  # function names, leaf first
    user_stack: tuple[int, ...]  # addresses, leaf first
    comm: str
    ns: int


def parse(text: str) -> Iterator[OffCpuRecord]:
    """Every aggregated off-CPU record of the @offcpu map."""
    for line in text.splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"bpftrace printed unreadable JSON: {line[:80]!r}") from e
        if doc.get("type") != "map" or MAP_NAME not in doc.get("data", {}):
            continue
        for key, ns in doc["data"][MAP_NAME].items():
            record = parse_key(key, int(ns))
            if record is not None:
                yield record


def parse_key(key: str, ns: int) -> OffCpuRecord | None:
    m = KEY.match(key)
    if m is None:
        return None
    return OffCpuRecord(
        tgid=int(m["tgid"]),
        tid=int(m["tid"]),
        kernel_state=state_letter(int(m["state"])),
        kernel_stack=tuple(_kernel_names(m["kstack"])),
        user_stack=tuple(_addresses(m["ustack"])),
        comm=m["comm"],
        ns=ns,
    )


def state_letter(prev_state: int) -> str:
    if prev_state & PREEMPTED_BIT:
        return "R"
    return STATE_LETTERS.get(prev_state & 0xFF, "S")


def _kernel_names(block: str) -> Iterator[str]:
    for line in block.split("\n"):
        name = line.strip()
        if name:
            yield name.split(" ", 1)[0].rsplit("+", 1)[0]


def _addresses(block: str) -> Iterator[int]:
    for line in block.split("\n"):
        word = line.strip()
        if word:
            yield int(word.split("+", 1)[0], 16) if word.startswith("0x") else 0
