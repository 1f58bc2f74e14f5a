"""`perf script -F pid,tid,time,ip,sym,dso` text: one timestamped stack per sample.

formats/perf_script.py aggregates samples as it reads and so forgets when each was
taken; the Python splice (formats/tool_output/python_splice.py) pairs each sample with the Python
stack of its thread at that moment, so it reads them one by one:

    21677/21677  9272.465275:
    \t          185073 PyList_Append (/usr/lib/libpython3.11.so.1.0)
    \t           fdf33 _PyEval_EvalFrameDefault (inlined)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from ...errors import UserError
from ..perf_script import frame_parts

HEADER = re.compile(r"^\s*(?:(?P<pid>\d+)/)?(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s*$")
FIELDS = "pid,tid,time,ip,sym,dso"


@dataclass(frozen=True)
class NativeFrame:
    address: int
    symbol: str  # "" when perf has none
    dso: str  # "inlined" for a frame inlined into the next one


@dataclass(frozen=True)
class Sample:
    pid: int  # 0 when perf did not print it
    tid: int
    time: float  # seconds, on the clock perf recorded with (-k)
    frames: tuple[NativeFrame, ...]  # leaf first


def samples(text: IO[str], name: str) -> Iterator[Sample]:
    """The samples of TEXT, in the order perf wrote them."""
    header: re.Match | None = None
    frames: list[NativeFrame] = []
    for line in text:
        if not line.strip():
            if header is not None:
                yield _sample(header, frames)
            header, frames = None, []
        elif header is None:
            header = HEADER.match(line)
            if header is None:
                raise UserError(
                    f"{name}: expected a `PID/TID TIME:` sample line, got {line.strip()[:60]!r}; "
                    f"give the output of `perf script -F {FIELDS}`"
                )
        elif (parts := frame_parts(line.strip())) is not None:
            address, symbol, _offset, dso = parts
            frames.append(NativeFrame(address, "" if symbol == "[unknown]" else symbol, dso))
    if header is not None:
        yield _sample(header, frames)


def _sample(header: re.Match, frames: list[NativeFrame]) -> Sample:
    pid = int(header["pid"] or 0)
    return Sample(pid, int(header["tid"]), float(header["time"]), tuple(frames))
