"""The web UI's answers computed from a stored run, kept as files in the store's
`answers/` folder (the CPU cache is another matter: cpu_cache_projections/).

A fresh `perfsleuth serve` would otherwise read the whole run from DuckDB and
build its flame graph before the first page can draw: ~1.9 s on a quiet machine
for 100,000 stacks, 5-7 s under load. Stored runs never change, so the bytes are
written once, on first use, and later servers only read them (~10 ms for 15 MB).

A file is named by the run's id and start time (ids are not reused, but a store
can be recreated at the same path), the store's schema version and a stamp of
perfsleuth's own code (any change to the code that computes an answer, an upgrade or
an edit, makes new files), so nothing stale is ever read. It is written to a
temporary name and renamed, so a crash leaves no half-written file; a store that
cannot be written (read-only, full disk) is served all the same, only without files.

Stores made before this folder was named kept the same files in `ui-cache/`; their
names held a stamp of the code that wrote them, so none could be read by this code:
the old folder is removed when the first answer is kept.

Paths here are strings (os.path), not pathlib's: `top` and `diff` read their kept files
without importing pathlib (0.003 CPU-s with the urllib.parse and ipaddress it imports).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from contextlib import suppress
from functools import cache

from .layout import SCHEMA_VERSION

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import Any

    from ..model.run import RunInfo

PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
FOLDER = "answers"
OLD_FOLDER = "ui-cache"


@cache
def code_stamp() -> str:
    """A digest of the package's Python files (name, size, modification time), once per
    process; walked with os.scandir (two thirds of os.walk's CPU, which was a third of
    Path.rglob's: every command that reads a kept answer pays it), and digested by zlib's
    CRC-32 and Adler-32 (hashlib's import alone cost more than the walk)."""
    root = os.fspath(PACKAGE)
    inside = len(root) + 1  # a path's characters after the package's folder and its /
    files = []
    folders = [root]
    for folder in folders:  # grows as the walk finds subfolders (not followed through links)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    files.append(f"{entry.path[inside:]}:{st.st_size}:{st.st_mtime_ns};")
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    listed = "".join(sorted(files)).encode()
    return f"{zlib.crc32(listed):08x}{zlib.adler32(listed):08x}"[:12]


class AnswerFiles:
    def __init__(self, store_root: str | os.PathLike[str]) -> None:
        self.folder = os.path.join(store_root, FOLDER)
        self.old_folder = os.path.join(store_root, OLD_FOLDER)

    def get(self, info: RunInfo, name: str, compute: Callable[[], bytes]) -> bytes:
        """The bytes of answer NAME for a run: read, or computed and kept."""
        kept = self.kept(info.id, info.started, name)
        if kept is not None:
            return kept
        data = compute()
        self.keep(info, name, data)
        return data

    def keep(self, info: RunInfo, name: str, data: bytes) -> None:
        """Keep DATA as answer NAME of a run, unless it is kept already, and remove what
        no reader can read any more: the run's files under another stamp (older code, or a
        run of the same id before the store was recreated), of this name or of any other,
        names no longer written (`counts` of count runs) included."""
        path = self._path(info.id, info.started, name)
        if os.path.exists(path):
            return
        stamp = os.path.basename(path).removeprefix(f"run{info.id}-{name}-")
        run = f"run{info.id}-"
        try:
            self._write(path, data)
            for old in os.listdir(self.folder):
                if old.startswith(run) and old.endswith(".bin") and not old.endswith(stamp):
                    with suppress(FileNotFoundError):
                        os.unlink(os.path.join(self.folder, old))
        except OSError:
            pass  # not kept: the next reader computes it again

    def kept(self, run_id: int, started: float, name: str) -> bytes | None:
        """The bytes of answer NAME for the run of this id and start time, if kept."""
        try:
            with open(self._path(run_id, started, name), "rb") as kept:
                return kept.read()
        except OSError:
            return None

    def kept_json(self, run_id: int, started: float, name: str) -> Any | None:
        """The JSON value of answer NAME for a run, if kept and readable. A file that does
        not parse (cut short or damaged on disk) is removed, so that the reader computes
        the answer again and keeps it anew: it made `top`, `diff` and `annotate` of a count
        run fail with a traceback."""
        import json  # the kept counts' readers do without it (kept_value)

        return self.kept_value(run_id, started, name, json.loads)

    def kept_value(
        self, run_id: int, started: float, name: str, loads: Callable[[bytes], Any]
    ) -> Any | None:
        """kept_json's, of a file read by `loads` (which raises ValueError for a file that
        does not load)."""
        data = self.kept(run_id, started, name)
        if data is None:
            return None
        try:
            return loads(data)
        except ValueError:
            with suppress(OSError):
                os.unlink(self._path(run_id, started, name))
            return None

    def _path(self, run_id: int, started: float, name: str) -> str:
        stamp = f"{int(started * 1e6)}-s{SCHEMA_VERSION}-{code_stamp()}"
        return os.path.join(self.folder, f"run{run_id}-{name}-{stamp}.bin")

    def _write(self, path: str, data: bytes) -> None:
        import shutil  # writers only: readers start without them
        import tempfile

        if os.path.isdir(self.old_folder):
            shutil.rmtree(self.old_folder, ignore_errors=True)
        os.makedirs(self.folder, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".bin")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)  # readable as the store is (mkstemp makes it 0600)
            os.replace(temporary, path)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
