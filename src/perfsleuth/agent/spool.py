"""The agent's on-disk spool: encoded windows waiting for the collector.

One file per window, named `<end ms>-<window id>.win` so that names sort oldest
first: a JSON line (id, start, end, rate, labels, samples) then the encoded
body. Files appear atomically (written aside, then renamed), so a crash leaves
either the whole window or none of it; a window leaves the spool only once the
collector has acknowledged it, and the collector stores a window id once, so
sending a window again after a crash is safe. The spool never grows past
`max_bytes`: the oldest windows are dropped first, and every drop is counted. A
window the disk refuses (full, read-only) is dropped and counted too, and leaves
nothing behind: the agent keeps running and spools again once there is room. A
window the collector refuses (400: it will never be accepted as it is) moves to
`refused/`, kept for a person to read and push again, not sent again by the agent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUFFIX = ".win"
REFUSED_DIR = "refused"
MAX_REFUSED = 100


class SpoolError(Exception):
    """A window could not be written to the spool (it is counted as dropped)."""


@dataclass(frozen=True)
class Spooled:
    path: Path
    meta: dict[str, Any]
    body: bytes


class Spool:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.dropped = 0
        root.mkdir(parents=True, exist_ok=True)
        for leftover in root.glob("*.tmp"):  # a write cut short by a crash
            leftover.unlink(missing_ok=True)

    def put(self, meta: dict[str, Any], body: bytes) -> list[str]:
        """Spool a window; returns the ids of the windows dropped to make room.

        Raises SpoolError, the window counted as dropped, when the disk refuses it.
        """
        data = json.dumps(meta, sort_keys=True).encode() + b"\n" + body
        name = f"{int(meta['end'] * 1000):015d}-{meta['id']}{SUFFIX}"
        dropped = self._make_room(len(data), keep=name)
        if len(data) > self.max_bytes:
            self.dropped += 1
            return [*dropped, meta["id"]]
        tmp = self.root / (name + ".tmp")
        try:
            _write(tmp, data)
            os.replace(tmp, self.root / name)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            self.dropped += 1
            raise SpoolError(f"{e.strerror or e} in {self.root}") from e
        return dropped

    def _make_room(self, size: int, keep: str) -> list[str]:
        files = [p for p in self.pending() if p.name != keep]
        total = sum(_size(p) for p in files)
        dropped = []
        while files and total + size > self.max_bytes:
            oldest = files.pop(0)
            total -= _size(oldest)
            oldest.unlink(missing_ok=True)
            self.dropped += 1
            dropped.append(window_id(oldest))
        return dropped

    def pending(self) -> list[Path]:
        """Spooled windows, oldest first."""
        return sorted(self.root.glob("*" + SUFFIX))

    def load(self, path: Path) -> Spooled | None:
        """A spooled window, None when it is gone or unreadable (then it is removed)."""
        try:
            data = path.read_bytes()
            head, _, body = data.partition(b"\n")
            return Spooled(path, json.loads(head), body)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            self.dropped += 1
            return None

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def keep_refused(self, path: Path) -> Path:
        """Move a window the collector refused into REFUSED_DIR, out of the sending
        queue, for a person to read (and push again once the cause is fixed). The
        newest MAX_REFUSED are kept; older ones are deleted and counted as dropped."""
        folder = self.root / REFUSED_DIR
        folder.mkdir(exist_ok=True)
        kept = folder / path.name
        os.replace(path, kept)
        for old in sorted(folder.glob("*" + SUFFIX))[:-MAX_REFUSED]:
            old.unlink(missing_ok=True)
            self.dropped += 1
        return kept

    @property
    def size(self) -> int:
        return sum(_size(p) for p in self.pending())


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def window_id(path: Path) -> str:
    return path.name.removesuffix(SUFFIX).split("-", 1)[1]


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:
        return 0
