"""The agent's symbol answers on disk, one file per build-id, across restarts.

A restarted agent (an upgrade, a reboot, a crash) otherwise names every program of
its host again, which is most of its first minutes' CPU on a busy host. An answer is
the inline chain of one file offset of one build-id, which never changes while the
build-id does not; only named answers are kept (an address left unknown may be named
once debug info is installed). Answers named with the build-id's debug file under
/usr/lib/debug/.build-id are kept apart from those named without one
(`BUILD_ID-debug.jsonl`): once a package's debug info is installed, its symbol-table-only
answers (functions without lines or inlines) are not read again, and a restarted agent
names its addresses anew (a running agent keeps its answers in memory until it drops its
caches). A build-id's file is read when a window first meets that build-id: only what the
host still runs is loaded. Each line is
`[offset, [[function, file, line], ...]]`, leaf first, every frame but the last one
inlined; a line cut by a crash is skipped. Past `max_bytes` the files written least
recently go.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..binaries import DEBUG_DIRS, debug_file_paths
from ..model.profile import Frame

MAX_BYTES = 64 << 20
BUILD_ID = re.compile(r"[0-9a-f]{8,128}")
WITH_DEBUG_FILE = "-debug"


class SymbolCache:
    def __init__(
        self, folder: Path, max_bytes: int = MAX_BYTES, debug_dirs: tuple[str, ...] = DEBUG_DIRS
    ) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.debug_dirs = debug_dirs  # where llvm-symbolizer finds debug files (symbols)
        self.loaded = 0  # answers read from disk, for the agent's metrics
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
        self.size = self._prune(max_bytes)

    def load(self, build_id: str, dso: str) -> dict[int, tuple[Frame, ...]]:
        """offset -> frames of the answers kept for `build_id`, their DSO named `dso`."""
        path = self._file(build_id)
        try:
            lines = path.read_text(errors="replace").splitlines() if path else []
        except OSError:
            return {}
        out: dict[int, tuple[Frame, ...]] = {}
        for line in lines:
            with contextlib.suppress(ValueError, TypeError):
                offset, chain = json.loads(line)
                last = len(chain) - 1
                out[int(offset)] = tuple(
                    Frame(str(fn), dso=dso, file=str(file), line=int(no), inlined=i < last)
                    for i, (fn, file, no) in enumerate(chain)
                )
        self.loaded += len(out)
        return out

    def add(self, build_id: str, answers: Iterable[tuple[int, tuple[Frame, ...]]]) -> None:
        """Append these answers to `build_id`'s file (a full or read-only disk: not kept)."""
        path = self._file(build_id)
        text = "".join(
            json.dumps([offset, [[f.function, f.file, f.line] for f in chain]]) + "\n"
            for offset, chain in answers
        )
        if path is None or not text:
            return
        if self.size + len(text) > self.max_bytes:
            self.size = self._prune(self.max_bytes // 2)
        with contextlib.suppress(OSError), open(path, "a") as f:
            f.write(text)
            self.size += len(text)

    def _file(self, build_id: str) -> Path | None:
        """The file of `build_id`'s answers as named now: with its debug file or without."""
        if not BUILD_ID.fullmatch(build_id):
            return None
        debug = any(map(os.path.isfile, debug_file_paths(build_id, self.debug_dirs)))
        return self.folder / f"{build_id}{WITH_DEBUG_FILE if debug else ''}.jsonl"

    def _prune(self, keep_bytes: int) -> int:
        """Remove the least recently written files until at most `keep_bytes` are left."""
        files = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                with contextlib.suppress(OSError):
                    stat = entry.stat()
                    files.append((stat.st_mtime, stat.st_size, entry.path))
        size = sum(s for _, s, _ in files)
        for _, length, path in sorted(files):
            if size <= keep_bytes:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                size -= length
        return size
