"""Finding the file of a recorded DSO: its path, else a copy with its build-id."""

from __future__ import annotations

import os
from pathlib import Path

from .binary import binary_at, build_id_of

DEBUG_DIRS = ("/usr/lib/debug",)


def debug_file_paths(build_id: str, dirs: tuple[str, ...] = DEBUG_DIRS) -> list[str]:
    """Where the separate debug file of this build-id may live (.build-id/xx/rest.debug)."""
    if len(build_id) < 3:
        return []
    return [os.path.join(d, ".build-id", build_id[:2], build_id[2:] + ".debug") for d in dirs]


def build_id_paths(build_id: str) -> list[str]:
    """Where a file with this build-id may live: debug files and perf's build-id cache."""
    if len(build_id) < 3:
        return []
    head, tail = build_id[:2], build_id[2:]
    out = debug_file_paths(build_id)
    home = os.environ.get("HOME") or str(Path.home())
    cache = os.path.join(home, ".debug", ".build-id", head, tail)
    out += [os.path.join(cache, n) for n in ("elf", "debug", "vdso")] + [cache]
    return out


def find_dso(path: str, build_id: str = "") -> str | None:
    """The file to symbolize `path` with.

    The recorded path when it still exists and its build-id matches (or none
    was recorded); else a file found by build-id under /usr/lib/debug/.build-id
    or perf's ~/.debug cache; else the recorded path even with a different
    build-id (better than nothing; the caller may flag it); else None.
    """
    exists = bool(path) and path.startswith("/") and os.path.isfile(path)
    if exists and (not build_id or build_id_of(path) in ("", build_id)):
        return path
    if build_id:
        for cand in build_id_paths(build_id):
            if binary_at(cand) is not None:
                return cand
    return path if exists else None
