"""The Firefox Profiler's processed profile format (profiler.firefox.com, "Load a profile
from file"), version 70: the format's shared tables (strings, functions, frames, stacks,
resources, sources) and one thread per thread of the run, each with its samples.

The shape follows the profiler's own type definitions (src/types/profile.ts) and empty
tables (src/profile-logic/data-structures.ts) at PROCESSED_VERSION; the profiler upgrades
any older processed version it is given, so a file written here stays loadable.

A stored run keeps aggregated stacks, not each sample's time: every (thread, stack) row
is one sample with its weight (`weightType` "samples", or "tracing-ms" for a run in ns),
placed one interval after the previous one, so the call tree, flame graph and stack chart
are exact and the track's time axis is only the rows' order.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import IO, TYPE_CHECKING, Any

from . import PROFILE, Output, TitledProfile

if TYPE_CHECKING:  # types alone: the registry imports this module for every command's --format
    from ..model.profile import Frame, Profile

PROCESSED_VERSION = 70
GECKO_VERSION = 36  # meta.version: the Gecko format the processed one was made from
INTERVAL_MS = 1.0
NS_PER_MS = 1e6
LIBRARY = 1  # ResourceType.Library
CATEGORIES = [
    {"name": "Other", "color": "grey", "subcategories": ["Other"]},
    {"name": "Kernel", "color": "orange", "subcategories": ["Other"]},
    {"name": "Python", "color": "blue", "subcategories": ["Other"]},
]
OTHER, KERNEL, PYTHON = range(3)


def _columns(*names: str) -> dict[str, Any]:
    return {**{n: [] for n in names}, "length": 0}


def _append(table: dict[str, Any], **row: Any) -> int:
    for name, value in row.items():
        table[name].append(value)
    table["length"] += 1
    return int(table["length"]) - 1


class _Shared:
    """profile.shared: every table the threads index into, each row made once."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}
        self.funcs: dict[tuple[str, str, str], int] = {}
        self.resources: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.frames: dict[int, int] = {}
        self.stacks: dict[tuple[int, int], int] = {}  # (prefix or -1, frame) -> stack
        self.func_table = _columns(
            "isJS", "relevantForJS", "name", "resource", "source", "lineNumber",
            "columnNumber", "originalLocation",
        )  # fmt: skip
        self.frame_table = _columns(
            "address", "inlineDepth", "category", "subcategory", "func", "lib",
            "nativeSymbol", "innerWindowID", "line", "column", "originalLocation",
        )  # fmt: skip
        self.stack_table = _columns("frame", "prefixOffset")
        self.resource_table = _columns("name", "host", "type")
        self.source_table = _columns(
            "id", "filename", "startLine", "startColumn", "sourceMapURL", "content"
        )

    def string(self, text: str) -> int:
        return self.strings.setdefault(text, len(self.strings))

    def stack(self, profile: Profile, stack: tuple[int, ...]) -> int | None:
        """The stack-table index of a perfsleuth stack (leaf first), prefixes made first."""
        node = -1
        for fid in reversed(stack):
            frame = self._frame(profile, fid)
            key = (node, frame)
            found = self.stacks.get(key)
            if found is None:
                index = self.stack_table["length"]
                offset = 0 if node < 0 else index - node
                found = self.stacks[key] = _append(
                    self.stack_table, frame=frame, prefixOffset=offset
                )
            node = found
        return node if node >= 0 else None

    def _frame(self, profile: Profile, fid: int) -> int:
        if fid not in self.frames:
            frame = profile.frames[fid]
            self.frames[fid] = _append(
                self.frame_table,
                address=-1,
                inlineDepth=0,
                category=_category(frame),
                subcategory=0,
                func=self._func(frame),
                lib=-1,
                nativeSymbol=None,
                innerWindowID=None,
                line=frame.line or None,
                column=None,
                originalLocation=None,
            )
        return self.frames[fid]

    def _func(self, frame: Frame) -> int:
        key = (frame.function, frame.dso, frame.file)
        if key not in self.funcs:
            self.funcs[key] = _append(
                self.func_table,
                isJS=False,
                relevantForJS=False,
                name=self.string(frame.function),
                resource=self._resource(frame.dso),
                source=self._source(frame.file),
                lineNumber=None,
                columnNumber=None,
                originalLocation=None,
            )
        return self.funcs[key]

    def _resource(self, dso: str) -> int:
        if not dso:
            return -1
        if dso not in self.resources:
            name = self.string(os.path.basename(dso) or dso)
            self.resources[dso] = _append(self.resource_table, name=name, host=None, type=LIBRARY)
        return self.resources[dso]

    def _source(self, file: str) -> int | None:
        if not file:
            return None
        if file not in self.sources:
            self.sources[file] = _append(
                self.source_table,
                id=None,
                filename=self.string(file),
                startLine=1,
                startColumn=1,
                sourceMapURL=None,
                content=None,
            )
        return self.sources[file]

    def to_json(self) -> dict[str, Any]:
        return {
            "stackTable": self.stack_table,
            "frameTable": self.frame_table,
            "funcTable": self.func_table,
            "resourceTable": self.resource_table,
            "nativeSymbols": _columns("libIndex", "address", "name", "functionSize"),
            "sources": self.source_table,
            "stringArray": list(self.strings),
            "sourceLocationTable": _columns("source", "line", "column"),
        }


def _category(frame: Frame) -> int:
    from ..model.profile import is_python_frame

    if frame.kernel:
        return KERNEL
    return PYTHON if is_python_frame(frame) else OTHER


def to_json(profile: Profile, title: str) -> dict[str, Any]:
    shared = _Shared()
    rows: dict[int, list[tuple[int | None, float]]] = defaultdict(list)
    for stack, weight, _count, thread, _state in profile.rows():
        rows[thread].append((shared.stack(profile, stack), weight))
    in_ms = profile.unit == "ns"
    threads = [
        _thread(profile, thread, thread_rows, in_ms, first=i == 0)
        for i, (thread, thread_rows) in enumerate(sorted(rows.items()))
    ]
    return {
        "meta": _meta(title),
        "libs": [],
        "pages": [],
        "shared": shared.to_json(),
        "threads": threads,
    }


def _meta(title: str) -> dict[str, Any]:
    return {
        "interval": INTERVAL_MS,
        "startTime": 0,
        "processType": 0,
        "product": title,
        "stackwalk": 1,
        "version": GECKO_VERSION,
        "preprocessedProfileVersion": PROCESSED_VERSION,
        "categories": CATEGORIES,
        "markerSchema": [],
        "symbolicated": True,
        "importedFrom": "perfsleuth",
    }


def _thread(
    profile: Profile,
    thread: int,
    rows: list[tuple[int | None, float]],
    in_ms: bool,
    first: bool,
) -> dict[str, Any]:
    known = profile.threads[thread] if thread >= 0 else None
    samples = {
        "stack": [stack for stack, _ in rows],
        "time": [i * INTERVAL_MS for i in range(len(rows))],
        "weight": [w / NS_PER_MS if in_ms else w for _, w in rows],
        "weightType": "tracing-ms" if in_ms else "samples",
        "length": len(rows),
    }
    return {
        "processType": "default",
        "processStartupTime": 0,
        "processShutdownTime": None,
        "registerTime": 0,
        "unregisterTime": None,
        "pausedRanges": [],
        "name": (known.name or f"tid {known.tid}") if known else "all samples",
        "isMainThread": first,
        "pid": str(known.pid if known else 0),
        "tid": known.tid if known else 0,
        "samples": samples,
        "markers": _columns("data", "name", "startTime", "endTime", "phase", "category"),
    }


def _write(doc: TitledProfile, fh: IO[Any]) -> None:
    json.dump(to_json(doc.profile, doc.title), fh, separators=(",", ":"))


OUTPUT = Output(
    name="firefox",
    help="the Firefox Profiler's processed profile JSON (profiler.firefox.com, load from file)",
    writers={PROFILE: _write},
)
