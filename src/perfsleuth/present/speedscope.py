"""speedscope JSON (https://www.speedscope.app/file-format-schema.json).

`sampled` gives one profile per thread (one for samples without a thread), each
aggregated stack a sample with its weight. `evented` lays the same stacks out
on a timeline, sorted root first like a flame graph, as open/close events whose
time axis is the profile's weight.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import IO, TYPE_CHECKING, Any

from . import PROFILE, Output, TitledProfile

if TYPE_CHECKING:  # types alone: the registry imports this module for every command's --format
    from ..model.profile import Frame, Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"ns": "nanoseconds", "bytes": "bytes"}
KINDS = ("sampled", "evented")

Stacks = dict[tuple[int, ...], float]  # root-first frame ids -> weight


def to_json(profile: Profile, kind: str, name: str) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown speedscope profile kind {kind!r}")
    make = _sampled if kind == "sampled" else _evented
    unit = UNITS.get(profile.unit, "none")
    profiles = [
        make(stacks, f"{name} {label}".strip(), unit)
        for label, stacks in sorted(_by_thread(profile).items())
    ]
    return {
        "$schema": SCHEMA,
        "shared": {"frames": [_frame(f) for f in profile.frames]},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "perfsleuth",
    }


def _frame(frame: Frame) -> dict:
    out: dict = {"name": frame.function + (" [inlined]" if frame.inlined else "")}
    if frame.file:
        out["file"] = frame.file
    if frame.line:
        out["line"] = frame.line
    return out


def _by_thread(profile: Profile) -> dict[str, Stacks]:
    groups: dict[str, Stacks] = defaultdict(lambda: defaultdict(float))
    for stack, weight, _count, tid, _state in profile.rows():
        groups[_thread_label(profile, tid)][stack[::-1]] += weight
    return groups


def _thread_label(profile: Profile, tid: int) -> str:
    if tid < 0:
        return ""
    thread = profile.threads[tid]
    return f"{thread.name} (tid {thread.tid})" if thread.name else f"tid {thread.tid}"


def _sampled(stacks: Stacks, name: str, unit: str) -> dict:
    ordered = sorted(stacks.items())
    weights = [w for _s, w in ordered]
    return {
        "type": "sampled",
        "name": name,
        "unit": unit,
        "startValue": 0,
        "endValue": sum(weights),
        "samples": [list(s) for s, _w in ordered],
        "weights": weights,
    }


def _evented(stacks: Stacks, name: str, unit: str) -> dict:
    events: list[dict] = []
    open_frames: list[int] = []
    at = 0.0
    for stack, weight in sorted(stacks.items()):
        common = _common_prefix(open_frames, stack)
        _close(events, open_frames, common, at)
        for fid in stack[common:]:
            events.append({"type": "O", "at": at, "frame": fid})
            open_frames.append(fid)
        at += weight
    _close(events, open_frames, 0, at)
    return {
        "type": "evented",
        "name": name,
        "unit": unit,
        "startValue": 0,
        "endValue": at,
        "events": events,
    }


def _common_prefix(a: list[int], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _close(events: list[dict], open_frames: list[int], keep: int, at: float) -> None:
    while len(open_frames) > keep:
        events.append({"type": "C", "at": at, "frame": open_frames.pop()})


def _write(doc: TitledProfile, fh: IO[Any]) -> None:
    json.dump(to_json(doc.profile, "sampled", doc.title), fh, separators=(",", ":"))


OUTPUT = Output(
    name="speedscope",
    help="speedscope JSON, one sampled profile per thread (speedscope.app)",
    writers={PROFILE: _write},
)
