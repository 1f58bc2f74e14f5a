"""Small Parquet files of a folder store kept in memory by the process that queries them.

The last minutes of a fleet are many small files (the head's flushes: a samples file
and a stacks and frames dictionary every 30 s), and opening each again cost a
last-15-minutes query more than summing their rows. A file's name is never reused
with other contents (batches, flushes and compactions write new names; stamps do not
repeat), so a table kept under its path, size and mtime is never stale; a file
deleted since is simply no longer selected. A file is kept the second time a query
asks for it: a one-shot `fleet top` scans only the columns it needs, as before (reading
every column of every file made it up to twice as slow). Files past KEEP_FILE_BYTES
(compacted hours) are always scanned, and the least recently used go past KEEP_BYTES.
S3 stores are not kept: learning a file's size costs a request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

KEEP_FILE_BYTES = 8 << 20
KEEP_BYTES = 256 << 20
SEEN_LIMIT = 1 << 16  # files asked for once, remembered until kept

_Key = tuple[str, int, int]  # path, size, mtime in ns


class KeptFiles:
    """Tables of small files read whole, least recently used out past `limit` bytes."""

    def __init__(self, limit: int = KEEP_BYTES) -> None:
        self.limit = limit
        self._tables: OrderedDict[_Key, pa.Table] = OrderedDict()
        self._bytes = 0
        self._seen: set[_Key] = set()
        self._lock = threading.Lock()

    def split(
        self, fs: pafs.FileSystem, paths: list[str], schema: pa.Schema
    ) -> tuple[pa.Table, list[str]]:
        """The rows of the small files of `paths` kept (or asked for before: read now
        and kept), and the paths left to scan."""
        if not paths or not isinstance(fs, pafs.LocalFileSystem):
            return schema.empty_table(), paths
        tables, rest = [], []
        for info in fs.get_file_info(paths):
            if info.type != pafs.FileType.File:
                raise FileNotFoundError(f"{info.path}: No such file or directory")
            if info.size > KEEP_FILE_BYTES:
                rest.append(info.path)
                continue
            key = (info.path, info.size, info.mtime_ns or 0)
            if self._first_time(key):
                rest.append(info.path)
            else:
                tables.append(self._table(fs, key, schema))
        return (pa.concat_tables(tables) if tables else schema.empty_table()), rest

    def _first_time(self, key: _Key) -> bool:
        with self._lock:
            if key in self._tables or key in self._seen:
                return False
            if len(self._seen) >= SEEN_LIMIT:
                self._seen.clear()
            self._seen.add(key)
            return True

    def _table(self, fs: pafs.FileSystem, key: _Key, schema: pa.Schema) -> pa.Table:
        with self._lock:
            table = self._tables.get(key)
            if table is not None:
                self._tables.move_to_end(key)
                return table
        # Through a dataset of the store's schema, as a scan reads it: the columns an
        # older file lacks read as nulls.
        table = ds.dataset(key[0], schema=schema, filesystem=fs).to_table().combine_chunks()
        with self._lock:
            self._seen.discard(key)
            if key not in self._tables:
                self._tables[key] = table
                self._bytes += table.nbytes
            while self._bytes > self.limit and len(self._tables) > 1:
                _, dropped = self._tables.popitem(last=False)
                self._bytes -= dropped.nbytes
        return table


KEPT = KeptFiles()
