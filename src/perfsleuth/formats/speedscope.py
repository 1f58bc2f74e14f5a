"""speedscope JSON (https://www.speedscope.app/file-format-schema.json), as py-spy
(`record -f speedscope`), rbspy, Austin and perfsleuth's own export write it, and as
Pyroscope's `/ingest?format=speedscope` takes it.

Each of the file's profiles is a thread (py-spy names them `Thread 25124 "name"`).
`sampled` profiles are stacks root first with a weight each; `evented` ones open and
close frames at times, and the time between two events goes to the frames then open.
Weights in a unit of time are stored as nanoseconds, `none` as samples, `bytes` as
bytes; a file whose profiles mix those kinds keeps the first profile's and says what
it left out. present/speedscope.py writes the format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.formats.py_spy import PYTHON_DSO, is_python_file, module_of
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread

SCHEMA = b"speedscope.app/file-format-schema"
# speedscope's units -> (the profile's unit, what one of them is in it)
UNITS = {
    "nanoseconds": ("ns", 1.0),
    "microseconds": ("ns", 1e3),
    "milliseconds": ("ns", 1e6),
    "seconds": ("ns", 1e9),
    "none": ("samples", 1.0),
    "bytes": ("bytes", 1.0),
}
MAX_NAME = 16384  # longer frame names are cut (a C++ template's can be long)
THREAD_NAME = re.compile(r'^Thread (?P<tid>\d+)(?: "(?P<name>.*)")?$')


def sniff(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and SCHEMA in head


def read(path: str | Path, max_bytes: int | None = None) -> Profile:
    path = Path(path)
    return parse(limits.read_bytes(path, max_bytes or limits.max_input_bytes()), path.name)


def parse(raw: bytes, name: str) -> Profile:
    """The profile of a speedscope document; a UserError naming what is wrong."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise UserError(f"{name}: not valid JSON ({str(e)[:80]}); the file is corrupt") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("profiles"), list):
        raise UserError(f"{name}: a speedscope file without a `profiles` list")
    frames = _frames(doc, name)
    profiles = [p for p in doc["profiles"] if isinstance(p, dict)]
    if not profiles:
        raise UserError(f"{name}: the speedscope file holds no profile")
    unit = _unit(profiles[0], name)[0]
    builder = ProfileBuilder(unit=unit, meta={"format": "speedscope"})
    left_out = []
    for index, profile in enumerate(profiles):
        its_unit, scale = _unit(profile, name)
        if its_unit != unit:
            left_out.append(str(profile.get("name", index))[:60])
            continue
        thread = _thread(profile, index)
        for stack, weight in _stacks(profile, frames, name):
            where = f"{name}: profile {index}"
            builder.add(stack, limits.checked(weight * scale, where), thread=thread)
    if left_out:
        builder.profile.meta["warnings"] = [
            f"{name}: left out {len(left_out)} profile(s) in another unit than {unit} "
            f"({', '.join(left_out[:3])})"
        ]
    return builder.build()


def _frames(doc: dict, name: str) -> list[Frame]:
    shared = doc.get("shared")
    listed = shared.get("frames") if isinstance(shared, dict) else None
    if not isinstance(listed, list):
        raise UserError(f"{name}: a speedscope file without `shared.frames`")
    return [_frame(f, name) for f in listed]


def _frame(frame: Any, name: str) -> Frame:
    if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
        raise UserError(f"{name}: a frame of `shared.frames` without a name")
    given_file, given_line = frame.get("file"), frame.get("line")
    file = given_file if isinstance(given_file, str) else ""
    line = given_line if isinstance(given_line, int) and 0 <= given_line < 1 << 31 else 0
    function = frame["name"][:MAX_NAME]
    if file and is_python_file(file):
        return Frame(function, dso=PYTHON_DSO.format(module_of(file)), file=file, line=line)
    return Frame(function, file=file, line=line)


def _unit(profile: dict, name: str) -> tuple[str, float]:
    unit = profile.get("unit", "none")
    if unit not in UNITS:
        raise UserError(f"{name}: unknown speedscope unit {str(unit)[:40]!r}")
    return UNITS[unit]


def _thread(profile: dict, index: int) -> Thread:
    label = str(profile.get("name", ""))[:200]
    match = THREAD_NAME.match(label)
    if match and len(match["tid"]) < 10:  # a thread id, not a number the store cannot keep
        return Thread(tid=int(match["tid"]), name=match["name"] or "")
    return Thread(tid=index + 1, name=label)


def _stacks(profile: dict, frames: list[Frame], name: str) -> list[tuple[list[Frame], float]]:
    """(stack leaf first, weight) of one profile, sampled or evented."""
    kind = profile.get("type")
    if kind == "sampled":
        return _sampled(profile, frames, name)
    if kind == "evented":
        return _evented(profile, frames, name)
    raise UserError(f"{name}: unknown speedscope profile type {str(kind)[:40]!r}")


def _frame_at(index: Any, frames: list[Frame], name: str) -> Frame:
    if not isinstance(index, int) or not 0 <= index < len(frames):
        raise UserError(f"{name}: frame index {str(index)[:20]} is not in `shared.frames`")
    return frames[index]


def _sampled(profile: dict, frames: list[Frame], name: str) -> list[tuple[list[Frame], float]]:
    samples, weights = profile.get("samples"), profile.get("weights")
    if not isinstance(samples, list) or not isinstance(weights, list):
        raise UserError(f"{name}: a sampled profile without `samples` and `weights`")
    if len(samples) != len(weights):
        raise UserError(f"{name}: {len(samples)} samples but {len(weights)} weights")
    out = []
    for stack, weight in zip(samples, weights, strict=True):
        if not isinstance(stack, list) or not isinstance(weight, int | float) or weight < 0:
            raise UserError(f"{name}: a sample is not a list of frame indices with a weight")
        out.append(([_frame_at(i, frames, name) for i in reversed(stack)], float(weight)))
    return out


def _evented(profile: dict, frames: list[Frame], name: str) -> list[tuple[list[Frame], float]]:
    """The time between each two events, to the frames open then (leaf first)."""
    events = profile.get("events")
    if not isinstance(events, list):
        raise UserError(f"{name}: an evented profile without `events`")
    out: list[tuple[list[Frame], float]] = []
    open_ids: list[int] = []
    last = profile.get("startValue", 0)
    for event in events:
        at = event.get("at") if isinstance(event, dict) else None
        if not isinstance(at, int | float) or not isinstance(last, int | float) or at < last:
            raise UserError(f"{name}: evented profile's events are not in time order")
        if open_ids and at > last:
            out.append(([frames[i] for i in reversed(open_ids)], float(at - last)))
        frame = event.get("frame")
        _frame_at(frame, frames, name)
        if event.get("type") == "O":
            open_ids.append(frame)
        elif event.get("type") == "C" and open_ids and open_ids[-1] == frame:
            open_ids.pop()
        else:
            raise UserError(f"{name}: event at {at} closes frame {frame}, which is not open")
        last = at
    return out
