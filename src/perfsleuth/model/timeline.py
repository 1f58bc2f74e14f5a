"""The order a run's samples were taken in, kept beside its aggregated Profile.

A Profile keeps one row per (stack, thread, state) and so loses time. A Timeline
keeps the samples in time order, run-length encoded: `count[i]` samples in a row
on stack `stack[i]` of thread `thread[i]` (indices into the run's Profile stacks and
threads, -1 for no thread), the first taken at `time_ns[i]` (the recorder's clock:
perf's is the machine's monotonic time, so only differences mean something).
Samples of every thread are in one sequence; a view of one thread filters it.

Kept as one document per run (KIND "timeline"); the columns are packed as
little-endian arrays, compressed, so a run of a million samples stays a few MB.
"""

from __future__ import annotations

import base64
import sys
import zlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar

from .documents import Upgrade

COLUMNS = (("stack", "i"), ("thread", "i"), ("count", "I"), ("time_ns", "Q"))


def _pack(values: array) -> str:
    if sys.byteorder == "big":  # pragma: no cover - the store's bytes are little-endian
        values = array(values.typecode, values)
        values.byteswap()
    # level 1: 5x faster than 6 on a 700k-sample timeline (0.02 against 0.11 CPU-s of
    # `import`), for a document 15% larger
    return base64.b64encode(deflate().compress(values.tobytes(), 1)).decode("ascii")


def deflate() -> ModuleType:
    """What compresses the columns: ISA-L's zlib (the isal package) writes the same zlib
    format as the zlib module, which reads it, 4x faster at level 1 for as many bytes
    (0.007 against 0.03 CPU-s for the bench's 1.2M samples). Imported when a timeline
    is written, not by every reader."""
    from isal import isal_zlib

    return isal_zlib


def _unpack(typecode: str, text: str) -> array:
    values = array(typecode)
    values.frombytes(zlib.decompress(base64.b64decode(text)))
    if sys.byteorder == "big":  # pragma: no cover
        values.byteswap()
    return values


@dataclass
class Timeline:
    KIND: ClassVar[str] = "timeline"
    NAME: ClassVar[str] = "samples"  # the document's name in the store
    VERSION: ClassVar[int] = 1
    UPGRADES: ClassVar[Sequence[Upgrade]] = ()

    stack: array = field(default_factory=lambda: array("i"))
    thread: array = field(default_factory=lambda: array("i"))
    count: array = field(default_factory=lambda: array("I"))
    time_ns: array = field(default_factory=lambda: array("Q"))

    def add(self, stack: int, thread: int, count: int, time_ns: int) -> None:
        """Append samples taken after every one added so far; joins the last run
        when they are on the same stack and thread."""
        if self.stack and self.stack[-1] == stack and self.thread[-1] == thread:
            self.count[-1] += count
            return
        self.stack.append(stack)
        self.thread.append(thread)
        self.count.append(count)
        self.time_ns.append(time_ns)

    def __len__(self) -> int:
        return len(self.stack)

    @property
    def samples(self) -> int:
        return sum(self.count)

    def to_json(self) -> dict[str, Any]:
        return {
            "encoding": "zlib+base64, little-endian",
            "runs": len(self),
            **{name: _pack(getattr(self, name)) for name, _ in COLUMNS},
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Timeline:
        columns = {name: _unpack(code, doc[name]) for name, code in COLUMNS}
        if len({len(c) for c in columns.values()}) > 1:
            raise ValueError("timeline document with columns of different lengths")
        return cls(**columns)
