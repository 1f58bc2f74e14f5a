"""Nameless frames, and how to get their names: the debug package, debuginfod, or -g.

Shared by the analyzers that report missing names (missing_symbols) and the ones that
name a library by its file when its functions have none (hot_library).
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache

from ..binaries import elf_info
from ..binaries.packaged import is_packaged
from ..model.profile import Frame

DEBUGINFOD = "set DEBUGINFOD_URLS=https://debuginfod.debian.net"
_ADDRESS = re.compile(r"^(0x)?[0-9a-f]{6,}$")


def is_unknown(frame: Frame) -> bool:
    name = frame.function
    return not name or name.startswith("[unknown") or bool(_ADDRESS.match(name))


def unknown_frames(frames: list[Frame]) -> list[bool]:
    """is_unknown of each frame, by frame id: asked once per frame, not once per frame of
    every stack (1.9 million calls on speedtest1's count run, ~1 CPU-s of `advise`)."""
    return [is_unknown(frame) for frame in frames]


def symbols_fix(dso: str, path: str) -> str:
    """'libz3.so.4: apt-get install libz3-4-dbgsym (...) or set DEBUGINFOD_URLS=...'."""
    if is_packaged(path):
        package = owning_package(path)
        debug = (
            f"apt-get install {package}-dbgsym (from the debian-debug archive)" if package else ""
        )
        return f"{dso}: {debug + ' or ' if debug else ''}{DEBUGINFOD}"
    info = elf_info(path) if path else None
    if info is not None and not info.has_symbols:
        return f"{dso}: stripped; rebuild or relink without -s / strip, and with -g"
    return f"{dso}: rebuild with -g (names and file:line come from the debug info)"


@lru_cache(maxsize=64)
def owning_package(path: str) -> str:
    """The Debian package that installed a file ('' when unknown)."""
    real = os.path.realpath(path)
    # Merged /usr: dpkg may know the file by its /lib name.
    candidates = dict.fromkeys([path, real, real.removeprefix("/usr")])
    try:
        out = subprocess.run(
            ["dpkg-query", "-S", *candidates],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    first = out.split(":", 1)[0].strip() if out else ""
    return first if first and " " not in first else ""
