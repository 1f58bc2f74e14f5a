"""The shared libraries an executable loads by name (DT_NEEDED), found as the loader
finds them: DT_RUNPATH/DT_RPATH ($ORIGIN expanded), then the system's library folders.

Read from the .dynamic and .dynstr sections with struct, nothing run: `ldd` would start
the loader on a file the user may not trust.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .binary import Binary
from .elf import PT_INTERP

DT_NULL, DT_NEEDED, DT_RPATH, DT_RUNPATH = 0, 1, 15, 29
SYSTEM_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
)


def needed(binary: Binary) -> list[str]:
    """The DT_NEEDED names, in the order the loader loads them."""
    return [value for tag, value in _dynamic_strings(binary) if tag == DT_NEEDED]


def needed_paths(binary: Binary) -> list[Path]:
    """Each DT_NEEDED library's file, those found; the loader's own search order."""
    entries = _dynamic_strings(binary)
    origin = str(Path(binary.path).resolve().parent)
    search = [
        d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
        for tag, value in entries
        if tag in (DT_RUNPATH, DT_RPATH)
        for d in value.split(":")
        if d
    ]
    found = []
    for tag, name in entries:
        if tag != DT_NEEDED:
            continue
        dirs = () if "/" in name else (*search, *SYSTEM_DIRS)
        candidates = [Path(d) / name for d in dirs] or [Path(name)]
        path = next((c for c in candidates if c.is_file()), None)
        if path is not None:
            found.append(path)
    return found


def interpreter(binary: Binary) -> Path | None:
    """The dynamic loader the executable names (PT_INTERP), when that file is there."""
    segment = next((s for s in binary.segments if s.type == PT_INTERP), None)
    if segment is None:
        return None
    path = Path(binary.data(segment).split(b"\0", 1)[0].decode(errors="replace"))
    return path if path.is_file() else None


def _dynamic_strings(binary: Binary) -> list[tuple[int, str]]:
    """(tag, string) of the .dynamic entries whose value is a .dynstr offset."""
    dynamic, strings = binary.section(".dynamic"), binary.section(".dynstr")
    if dynamic is None or strings is None or not binary.is_x86_64:
        return []
    table, names = binary.data(dynamic), binary.data(strings)
    out = []
    for tag, value in struct.iter_unpack("<qQ", table[: len(table) - len(table) % 16]):
        if tag == DT_NULL:
            break
        if tag in (DT_NEEDED, DT_RPATH, DT_RUNPATH) and value < len(names):
            end = names.find(b"\0", value)
            text = names[value : end if end >= 0 else len(names)]
            out.append((tag, text.decode(errors="replace")))
    return out
