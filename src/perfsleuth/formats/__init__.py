"""Profile readers, one format per module (writers are outputs: see present/).

READERS names every format `perfsleuth import` reads, in sniffing order, with the
description its help and errors show. Every reader module has `sniff(head: bytes) -> bool`,
which recognises the format from the first bytes of a file (gunzipped when the file is
gzip-compressed), and `read(path) -> Profile`. `detect` asks them in that order.
"""

from __future__ import annotations

import importlib
import zlib
from pathlib import Path
from types import ModuleType

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Profile

# Sniffing order: the most specific formats first, the loose text ones last.
READERS = {
    "perf_data": "perf.data",
    "pprof": "pprof profile.proto (plain or gzipped)",
    "callgrind": "callgrind/cachegrind out",
    "perf_script": "perf script text",
    "folded": "FlameGraph folded stacks",
}
FORMATS = tuple(READERS)
DESCRIPTIONS = ", ".join(READERS.values())
HEAD_SIZE = 4096
GZIP_MAGIC = b"\x1f\x8b"


def module(name: str) -> ModuleType:
    """The reader module for a format name from FORMATS."""
    if name not in FORMATS:
        raise UserError(f"unknown format {name!r}; use one of: {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{name}")


def read_head(path: str | Path) -> bytes:
    """The first HEAD_SIZE bytes of the file, gunzipped if it is gzip-compressed."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(HEAD_SIZE)
    except FileNotFoundError as e:
        raise UserError(f"{p}: no such file; check the path") from e
    except IsADirectoryError as e:
        raise UserError(f"{p}: is a directory; pass a profile file") from e
    except PermissionError as e:
        raise UserError(f"{p}: permission denied; make the file readable") from e
    if not head:
        raise UserError(f"{p.name}: the file is empty; record or export the profile again")
    if head[:2] == GZIP_MAGIC:
        return _gunzip_head(p)
    return head


def _gunzip_head(p: Path) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = b""
    try:
        with p.open("rb") as f:
            while len(out) < HEAD_SIZE and (chunk := f.read(HEAD_SIZE)):
                out += inflater.decompress(chunk, HEAD_SIZE - len(out))
    except zlib.error as e:
        raise UserError(f"{p.name}: broken gzip data ({e}); the file is corrupt") from e
    return out


def detect(path: str | Path) -> ModuleType:
    """The reader module for the file at `path`, recognised by its content."""
    p = Path(path)
    head = read_head(p)
    for mod in map(module, FORMATS):
        if mod.sniff(head):
            if _is_gzipped(p) and mod.__name__ != f"{__name__}.pprof":
                raise UserError(f"{p.name}: gzip-compressed; decompress it with gunzip first")
            return mod
    raise UserError(f"{p.name}: not a profile format perfsleuth reads; supported: {DESCRIPTIONS}")


def _is_gzipped(p: Path) -> bool:
    with p.open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def read_any(path: str | Path, fmt: str | None = None) -> tuple[Profile, str]:
    """Read a profile (of format `fmt`, else detected); returns it with the format's name."""
    read_head(path)  # a missing or empty file is the user's error whatever the format
    mod = module(fmt) if fmt else detect(path)
    name = mod.__name__.rsplit(".", 1)[-1]
    return mod.read(path), name
