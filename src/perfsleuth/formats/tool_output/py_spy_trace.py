"""py-spy's Chrome trace (`py-spy record --threads --format chrometrace`): when each
thread's Python stack changed.

py-spy writes a `B` (begin) event for each frame that comes onto a thread's stack and
an `E` (end) for each that leaves it, stamped `ts`: microseconds since py-spy began
recording (its `Instant::now()`, CLOCK_MONOTONIC on Linux) at the moment it handled
the sample that saw the change. The origin is not in the file: the caller passes it
(collect/python.py takes the moment py-spy was started). Replaying the events gives
each thread's Python stack from one change to the next. With `--threads` the root
frame is `thread (TID): NAME`, TID the OS thread id that perf reports too; a frame is
written back as py-spy's raw format writes it, `NAME (FILE:LINE)`.

On CPython before 3.11 the thread state holds no OS thread id, and py-spy, which would
need to stop the process to find it, names the thread by its pthread id in hex
(`thread (0x7FD058627B80)`) with `--nonblocking`. Such a timeline is keyed by that id,
always above PID_MAX (no OS thread id is): formats/tool_output/python_splice.py pairs it with a
thread of perf's samples.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError

THREAD = re.compile(r"^thread \((?P<tid>\d+|0x[0-9A-Fa-f]+)\)(?::\s?(?P<name>.*))?$")
US = 1e-6
PID_MAX = 1 << 22  # the kernel's PID_MAX_LIMIT: OS thread ids are below it


@dataclass
class Timeline:
    """One thread: the Python stack (root first) from each time (seconds) to the next."""

    name: str = ""
    times: list[float] = field(default_factory=list)
    stacks: list[tuple[str, ...]] = field(default_factory=list)


def read(path: Path, origin: float) -> dict[int, Timeline]:
    """The timelines by OS thread id; ORIGIN is when py-spy began, in CLOCK_MONOTONIC s."""
    events = _events(path)
    open_frames: dict[int, list[str]] = {}
    tids: dict[int, int] = {}  # py-spy's tid field -> OS thread id
    timelines: dict[int, Timeline] = {}
    for event in events:
        phase, key = event.get("ph"), event.get("tid")
        if phase not in ("B", "E") or not isinstance(key, int):
            continue
        frames = open_frames.setdefault(key, [])
        if phase == "B":
            frames.append(_frame(event))
        elif frames:
            frames.pop()
        if frames and (thread := THREAD.match(frames[0])):
            tids[key] = int(thread["tid"], 0)
            timeline = timelines.setdefault(tids[key], Timeline())
            timeline.name = thread["name"] or timeline.name  # py-spy learns it a bit later
        if key in tids:
            _note(timelines[tids[key]], origin + float(event.get("ts", 0)) * US, frames[1:])
    return timelines


def _events(path: Path) -> list[dict]:
    try:
        events = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except OSError as e:
        raise UserError(f"{path.name}: cannot read ({e.strerror}); record again") from e
    except json.JSONDecodeError as e:
        raise UserError(f"{path.name}: not a py-spy Chrome trace ({e.msg}); record again") from e
    if not isinstance(events, list):
        raise UserError(f"{path.name}: not a py-spy Chrome trace (no event list); record again")
    return [e for e in events if isinstance(e, dict)]


def _frame(event: dict) -> str:
    args = event.get("args") or {}
    name, file = str(event.get("name", "")), str(args.get("filename") or "")
    return f"{name} ({file}:{int(args.get('line') or 0)})" if file else name


def _note(timeline: Timeline, when: float, frames: list[str]) -> None:
    """The stack from WHEN on; several events of one sample share a time: the last wins."""
    if timeline.times and timeline.times[-1] == when:
        timeline.stacks[-1] = tuple(frames)
    else:
        timeline.times.append(when)
        timeline.stacks.append(tuple(frames))
