"""The exact counts of a count run, kept in the store as one document.

The document holds callgrind's own out file, compressed: every per-instruction,
per-line, per-function and per-call-edge count stays exactly as callgrind wrote
it, and `perfsleuth export`-style tools (callgrind_annotate, kcachegrind) can
read it back unchanged. Views, analyzers and the gate parse it on demand with
formats.callgrind.
"""

from __future__ import annotations

import base64
import tempfile
import zlib
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..store import Store
from . import callgrind

KIND = "counts"
NAME = "callgrind.out"


def encode(path: Path, cwd: Path | None = None) -> dict[str, Any]:
    """The document of a callgrind.out file, with the text of its counted source lines
    as they were when the run was recorded (so a later diff can follow moved lines)."""
    raw = path.read_bytes()
    return {
        "format": "callgrind.out",
        "encoding": "zlib+base64",
        "size": len(raw),
        "data": base64.b64encode(zlib.compress(raw, 6)).decode("ascii"),
        "sources": counted_source_lines(callgrind.parse(path), cwd or Path.cwd()),
    }


def counted_source_lines(data: callgrind.CallgrindData, cwd: Path) -> dict[str, dict[str, str]]:
    """file -> line number (as a string, for JSON) -> text, for every counted line."""
    counted: dict[str, set[int]] = {}
    for sites in data.self_costs.values():
        for file, line in sites:
            if line > 0:
                counted.setdefault(file, set()).add(line)
    out = {}
    for file, lines in counted.items():
        text = _read_lines(file, cwd)
        if text:
            out[file] = {str(n): text[n - 1] for n in sorted(lines) if n <= len(text)}
    return out


def _read_lines(name: str, cwd: Path) -> list[str]:
    path = Path(name) if Path(name).is_absolute() else cwd / name
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []


def decode_bytes(doc: dict[str, Any]) -> bytes:
    return zlib.decompress(base64.b64decode(doc["data"]))


def parse(doc: dict[str, Any]) -> callgrind.CallgrindData:
    with tempfile.TemporaryDirectory(prefix="perfsleuth-") as tmp:
        path = Path(tmp) / NAME
        path.write_bytes(decode_bytes(doc))
        return callgrind.parse(path)


def find(store: Store, run_id: int) -> dict[str, Any] | None:
    return store.documents(run_id, KIND).get(NAME)


def load(store: Store, run_id: int) -> callgrind.CallgrindData:
    """The exact counts of a count run, or a clear error for any other run."""
    doc = find(store, run_id)
    if doc is None:
        raise UserError(
            f"run {run_id} has no exact counts; record one with "
            "`perfsleuth record --mode count -- CMD`"
        )
    return parse(doc)


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
