"""Answers kept in the server's memory: a small thread-safe memo (stored runs never change,
so what is computed from one is kept) and values kept while the store's files are unchanged.
The files of answers kept across servers are store/answers.py's."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any


class Memo:
    """Least-recently-used results by key; a key is computed once even when asked concurrently."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]
            value = compute()
            with self._lock:
                self._values[key] = value
                self._computing.pop(key, None)
                while len(self._values) > self.capacity:
                    self._values.popitem(last=False)
            return value


class FileVersioned:
    """Values read from files that can change (the run list, findings): kept until one
    of the files changes (size or modification time), then read again.

    Every store read opens the DuckDB file (~0.1-0.2 s, holding the CPU); the
    server must not keep it open, or `perfsleuth record` could not write while
    the UI is up. A stat() per request is all an unchanged store costs.
    """

    def __init__(self, paths: Callable[[], list[Path]]) -> None:
        self._paths = paths
        self._values: dict[Hashable, tuple[tuple, Any]] = {}
        self._lock = threading.Lock()

    def version(self) -> tuple:
        stamps = []
        for path in self._paths():
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            stamps.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def get(self, key: Hashable, load: Callable[[], Any]) -> Any:
        version = self.version()
        with self._lock:
            entry = self._values.get(key)
        if entry is not None and entry[0] == version:
            return entry[1]
        value = load()
        with self._lock:
            self._values[key] = (version, value)
        return value
