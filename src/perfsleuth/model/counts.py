"""The exact counts of a count run (`record --mode count`), kept as one document.

It holds callgrind's own out file, byte for byte: every per-instruction, per-line,
per-function and per-call-edge count stays exactly as callgrind wrote it, and tools
such as callgrind_annotate or kcachegrind read it back unchanged. Beside it are
the source files it counts lines of, as they were when the run was recorded, so an
annotated listing or a diff of the run stays right after the sources are edited.
formats/counts.py makes one from a callgrind.out file and parses it.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .documents import Upgrade

Sources = dict[str, list[str]]  # file -> its lines, as they were when the run was recorded


def _pack(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text))


def _add_sources(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: documents recorded before they carried the source files get none
    (their listings read the files from disk); later unversioned ones keep theirs."""
    return {"sources": _pack(b"{}"), **doc}


@dataclass(frozen=True)
class Counts:
    KIND: ClassVar[str] = "counts"
    NAME: ClassVar[str] = "callgrind.out"  # the document's name in the store
    VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[Sequence[Upgrade]] = (_add_sources,)

    callgrind_out: bytes
    sources: Sources = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "callgrind.out",
            "encoding": "zlib+base64",
            "size": len(self.callgrind_out),
            "data": _pack(self.callgrind_out),
            "sources": _pack(json.dumps(self.sources).encode()),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Counts:
        return cls(_unpack(doc["data"]), json.loads(_unpack(doc["sources"])))
