"""The exact counts of a count run, kept in the store as one document.

The document holds callgrind's own out file, compressed: every per-instruction,
per-line, per-function and per-call-edge count stays exactly as callgrind wrote
it, and `perfsleuth export`-style tools (callgrind_annotate, kcachegrind) can
read it back unchanged. Views, analyzers and the gate parse it on demand with
formats.callgrind.
"""

from __future__ import annotations

import base64
import json
import tempfile
import zlib
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..store.runs import Store
from . import callgrind

KIND = "counts"
NAME = "callgrind.out"
MAX_SOURCE_BYTES = 4 << 20  # larger source files are read from disk when shown


def encode(path: Path, cwd: Path | None = None) -> dict[str, Any]:
    """The document of a callgrind.out file, with the source files it counts lines of
    as they were when the run was recorded: an annotated listing or a diff of this
    run stays right after the sources are edited."""
    raw = path.read_bytes()
    sources = source_files(callgrind.parse(path), cwd or Path.cwd())
    return {
        "format": "callgrind.out",
        "encoding": "zlib+base64",
        "size": len(raw),
        "data": _pack(raw),
        "sources": _pack(json.dumps(sources).encode()),
    }


def _pack(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text))


def source_files(data: callgrind.CallgrindData, cwd: Path) -> dict[str, list[str]]:
    """file name as callgrind gives it -> its lines, for every readable counted file."""
    names = {file for sites in data.self_costs.values() for file, line in sites if line > 0}
    out = {}
    for name in sorted(names):
        path = Path(name) if Path(name).is_absolute() else cwd / name
        try:
            if path.stat().st_size <= MAX_SOURCE_BYTES:
                out[name] = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
    return out


def sources(doc: dict[str, Any]) -> dict[str, list[str]]:
    """The source files recorded with the run ({} for documents without them)."""
    packed = doc.get("sources")
    return json.loads(_unpack(packed)) if isinstance(packed, str) else {}


def decode_bytes(doc: dict[str, Any]) -> bytes:
    return _unpack(doc["data"])


def parse(doc: dict[str, Any]) -> callgrind.CallgrindData:
    with tempfile.TemporaryDirectory(prefix="perfsleuth-") as tmp:
        path = Path(tmp) / NAME
        path.write_bytes(decode_bytes(doc))
        return callgrind.parse(path)


def find(store: Store, run_id: int) -> dict[str, Any] | None:
    return store.documents(run_id, KIND).get(NAME)


def load_document(store: Store, run_id: int) -> dict[str, Any]:
    """The counts document of a count run, or a clear error for any other run."""
    doc = find(store, run_id)
    if doc is None:
        raise UserError(
            f"run {run_id} has no exact counts; record one with "
            "`perfsleuth record --mode count -- CMD`"
        )
    return doc


def load(store: Store, run_id: int) -> callgrind.CallgrindData:
    return parse(load_document(store, run_id))


def function_self(
    data: callgrind.CallgrindData, event: str = "Ir", *, merge_unnamed: bool = False
) -> dict[str, int]:
    """Exact self count of `event` per function name (objects merged, as names are shown).

    Code without a symbol is named by its address, which moves with every rebuild;
    `merge_unnamed` puts all of an object's unnamed code under one name so that two
    builds compare."""
    index = data.events.index(event)
    out: dict[str, int] = {}
    for (ob, fn), sites in data.self_costs.items():
        name = f"[unnamed code in {Path(ob).name}]" if merge_unnamed and _is_address(fn) else fn
        out[name] = out.get(name, 0) + sum(costs[index] for costs in sites.values())
    return out


def _is_address(name: str) -> bool:
    return name.startswith("0x") and all(c in "0123456789abcdefABCDEF" for c in name[2:])


def line_self(data: callgrind.CallgrindData, event: str = "Ir") -> dict[tuple[str, int], int]:
    """Exact self count of `event` per (file, line)."""
    index = data.events.index(event)
    out: dict[tuple[str, int], int] = {}
    for sites in data.self_costs.values():
        for (file, line), costs in sites.items():
            out[file, line] = out.get((file, line), 0) + costs[index]
    return out


def total(data: callgrind.CallgrindData, event: str = "Ir") -> int:
    return data.totals[data.events.index(event)] if event in data.events else 0
