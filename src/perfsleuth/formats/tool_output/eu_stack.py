"""Output of `eu-stack -p PID -b -q -m` (elfutils) -> thread stacks.

The layout (elfutils 0.188), one block per thread, frames leaf first:

    PID 25982 - process
    TID 25982:
    #0  0x00007f3b074a412b - /usr/lib/x86_64-linux-gnu/libc.so.6
        [93ac61ec...a40]@0x7f3b0741e000+0x8612b
    #1  0x00007f3b074aa482 - /usr/lib/x86_64-linux-gnu/libc.so.6
        [93ac61ec...a40]@0x7f3b0741e000+0x8c481

The second line of a frame gives the module's build-id, its load address and
the pc's offset from it, already moved back into the call instruction for
return addresses; frames in memory no module covers ([vdso] without a file, JIT
code) have no such line and keep only their absolute address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FRAME = re.compile(r"^#(?P<depth>\d+)\s+0x(?P<addr>[0-9a-fA-F]+)(?:\s+(?P<rest>.*))?$")
MODULE_LINE = re.compile(
    r"^\s+\[(?P<build_id>[0-9a-fA-F]*)\]@0x(?P<base>[0-9a-fA-F]+)\+0x(?P<offset>[0-9a-fA-F]+)"
)
TID_LINE = re.compile(r"^TID (?P<tid>\d+):\s*$")
PID_LINE = re.compile(r"^PID (?P<pid>\d+) - ")


@dataclass
class EuFrame:
    address: int
    module: str = ""  # path of the module's file, "" when unknown
    build_id: str = ""
    offset: int | None = None  # pc offset from the module's load address


@dataclass
class EuThread:
    tid: int
    pid: int
    frames: list[EuFrame] = field(default_factory=list)


def parse(text: str) -> list[EuThread]:
    """Every thread's stack in one eu-stack snapshot; unparsable lines are skipped."""
    threads: list[EuThread] = []
    pid = 0
    current: EuThread | None = None
    for line in text.splitlines():
        if m := PID_LINE.match(line):
            pid = int(m["pid"])
        elif m := TID_LINE.match(line):
            current = EuThread(tid=int(m["tid"]), pid=pid)
            threads.append(current)
        elif current is not None and (m := FRAME.match(line)):
            current.frames.append(EuFrame(int(m["addr"], 16), module=_module_of(m["rest"] or "")))
        elif current is not None and current.frames and (m := MODULE_LINE.match(line)):
            frame = current.frames[-1]
            frame.build_id = m["build_id"].lower()
            frame.offset = int(m["offset"], 16)
    return threads


def _module_of(rest: str) -> str:
    """The module path after ` - ` (-m), behind an optional symbol name."""
    _, sep, module = rest.rpartition("- ")
    return module.strip() if sep else ""
