"""FleetStore: append windows, record host status, and hand readers the files to read."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa

from ...errors import NothingStored, UserError
from ...model.fleet import FleetStatus, Window
from .appending import Appender
from .batches import Batches
from .compaction import Compacted, compact
from .filesystem import Files, StoreUnavailable, open_root
from .head import FLUSH_ROWS, FLUSH_S, Head, head_folder
from .inventory import inventory
from .label_values import label_values
from .layout import LAYOUT_FILE
from .reading import Selection, select
from .retention import expire
from .symbols import LateSymbols

T = TypeVar("T")


class FleetStore:
    """The fleet store at `root`: a folder, or `s3://bucket/prefix` (endpoint: `endpoint`,
    else $AWS_ENDPOINT_URL). Safe to use from several threads and processes at once for
    appends, reads, compactions and retention runs (the last two take turns: lease.py)."""

    def __init__(
        self, root: str, endpoint: str | None = None, debuginfod: list[str] | None = None
    ) -> None:
        self.root = root
        self.files: Files = open_root(root, endpoint)
        self.files.clear_tmp()
        self.late_symbols = LateSymbols(self.files, debuginfod or [])
        self.batches = Batches(self.files)
        self.appender = Appender(self.files, self.batches)
        self.head_folder = head_folder(self.files, root)

    def append(self, window: Window) -> bool:
        """Store every sample of `window`; False (and nothing changes) when its id is stored.

        Files appear in dependency order, each atomically: frames, stacks, the samples
        file (what readers count, created only if absent), then the window marker (what
        deduplication checks). A crash before the samples file leaves only unreferenced
        dictionary rows; a crash after it is completed by the retry, which finds the
        samples file and returns False. Either way a retried window is counted exactly
        once. Windows appended at once from several threads are written together
        (appending.py). Raises StoreUnavailable when the store cannot be written (the
        caller should retry).
        """
        return self._guard(lambda: self.appender.append(window))

    def head(self, flush_s: float = FLUSH_S, flush_rows: int = FLUSH_ROWS) -> Head:
        """A head for a collector: appends acknowledged once in its write-ahead log,
        written to this store in batches (head.py). It first flushes the logs of
        collectors that died."""
        return self._guard(
            lambda: Head(self.files, self.head_folder, flush_s, flush_rows, self.batches)
        )

    def close_head(self, head: Head) -> None:
        """Flush `head` and stop it; when the store cannot be written now, its log stays
        for the next collector started on this store (a UserError says so)."""
        try:
            self._guard(head.close)
        except StoreUnavailable as e:
            raise UserError(f"{e}; the pushes are kept in {self.head_folder}") from e

    def put_host_status(self, host: str, status: dict) -> None:
        """Keep `status` (an agent's own metrics: samples/s, lost samples, dropped windows,
        CPU, RSS, ...; any JSON values) as `host`'s latest, stamped with the time now.
        The host name never becomes a path: the file is named by its hash."""
        doc = {"host": host, "updated": time.time(), "metrics": status}
        name = hashlib.blake2b(host.encode(), digest_size=12).hexdigest()
        self._guard(lambda: self.files.put(f"hosts/{name}.json", json.dumps(doc).encode()))

    def upload_symbols(self, path: str) -> tuple[str, int, bool]:
        """Keep the function symbols of the ELF file at `path` (an unstripped binary or a
        .debug file) for its build-id, and the file when it has DWARF; (build-id,
        functions, whether file:line is kept). See symbols.py."""
        return self._guard(lambda: self.late_symbols.upload(path))

    def name_frames(self, frames: pa.Table) -> pa.Table:
        """Rows of the frames table, unknown functions named by symbols uploaded or
        fetched from the debuginfod servers since (their failures: late_symbols.notes)."""
        return self._guard(lambda: self.late_symbols.name(frames))

    def label_values(self) -> dict[str, set[str]]:
        """{label name: values} of every window stored: `service` and the user labels
        (see label_values.py); none for a store without data."""
        if not self.has_data():
            return {}
        selection = self.select(0.0, float("inf"))
        return self._guard(lambda: label_values(selection, ("service",)))

    def status(self) -> FleetStatus:
        """Hosts seen (last push, samples/s, their agents' metrics), store size and extent.

        Reads host files and the markers of the newest two hours; see status.py.
        """
        from .status import status  # status reads the whole listing: only when asked

        return self._guard(lambda: status(self.batches, self.root, self.head_folder))

    def inventory(self, start: float, end: float) -> list[dict]:
        """The markers of the windows that started in [start, end) and listed the shared
        libraries of their processes ({"host", "service", "labels": {user labels},
        "libraries": {exe: [path]}})."""
        return self._guard(lambda: inventory(self.batches, start, end, self.head_folder))

    def compact(self) -> Compacted:
        """Merge each partition's small files, deduplicate stacks and frames, write rollups.

        Readers running meanwhile count every sample once (compaction.py says how)."""
        if not self.has_data():
            return Compacted()
        return self._guard(lambda: compact(self.files, self.root))

    def expire(self, older_than: float) -> list[str]:
        """Delete the hour partitions ending at or before unix time `older_than`."""
        return self._guard(lambda: expire(self.files, older_than, self.root))

    def has_data(self) -> bool:
        return self._guard(lambda: self.files.exists(LAYOUT_FILE))

    def select(self, start: float, end: float, grain: float = 3600) -> Selection:
        """The files holding the samples whose window started in [start, end), to be
        summed in buckets of `grain` seconds (reading.select)."""
        if not self.has_data():
            raise NothingStored(
                f"no fleet store at {self.root}: start `perfsleuth collector --store "
                f"{self.root}` and push windows to it first"
            )
        return self._guard(lambda: select(self.files, start, end, grain, self.head_folder))

    def _guard(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except FileNotFoundError:
            raise  # a file a compaction just replaced: readers select again
        except OSError as e:
            reason = next((line for line in str(e).splitlines() if line.strip()), repr(e))
            raise StoreUnavailable(f"the fleet store {self.root} failed: {reason}") from e
