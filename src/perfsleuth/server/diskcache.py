"""Answers computed from a stored run, kept as files beside the store.

A fresh `perfsleuth serve` would otherwise read the whole run from DuckDB and
build its flame graph before the first page can draw: ~1.9 s on a quiet machine
for 100,000 stacks, 5-7 s under load. Stored runs never change, so the bytes are
written once, on first use, and later servers only read them (~10 ms for 15 MB).

A file is named by the run's id and start time (ids are not reused, but a store
can be recreated at the same path), the store's schema version and the answer's
own encoding version, so nothing stale is ever read. It is written to a temporary
name and renamed, so a crash leaves no half-written file; a store that cannot be
written (read-only, full disk) is served all the same, only without the files.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..model.run import RunInfo
from ..store.runs import SCHEMA_VERSION


class DiskCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, info: RunInfo, name: str, version: int, compute: Callable[[], bytes]) -> bytes:
        """The bytes of answer NAME (encoding VERSION) for a run: read, or computed and kept."""
        prefix = f"run{info.id}-{name}-"
        path = self.folder / f"{prefix}{int(info.started * 1e6)}-s{SCHEMA_VERSION}-v{version}.bin"
        try:
            return path.read_bytes()
        except OSError:
            pass
        data = compute()
        try:
            self._write(path, data)
            for old in self.folder.glob(f"{prefix}*.bin"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # not kept: the next server computes it again
        return data

    def _write(self, path: Path, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".bin")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
