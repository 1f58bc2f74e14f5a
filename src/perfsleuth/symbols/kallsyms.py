"""Kernel addresses -> symbol names, from /proc/kallsyms."""

from __future__ import annotations

import bisect
from functools import lru_cache


class Kallsyms:
    """A sorted kernel symbol table; `lookup(addr)` gives (name, module)."""

    def __init__(self, entries: list[tuple[int, str, str]]) -> None:
        entries.sort()
        self._addrs = [a for a, _, _ in entries]
        self._entries = entries

    @classmethod
    def parse(cls, text: str) -> Kallsyms:
        entries: list[tuple[int, str, str]] = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 3:
                continue
            try:
                addr = int(parts[0], 16)
            except ValueError:
                continue
            if addr == 0 or parts[1] not in "tTwWiI":
                continue
            module = parts[3].strip("[]") if len(parts) > 3 else ""
            entries.append((addr, parts[2], module))
        return cls(entries)

    @property
    def usable(self) -> bool:
        """False when addresses are hidden (kptr_restrict) or nothing was read."""
        return bool(self._entries)

    def lookup(self, addr: int) -> tuple[str, str] | None:
        """(symbol, module or '') of the function containing addr; None if below all."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        _, name, module = self._entries[i]
        return name, module


@lru_cache(maxsize=2)
def load_kallsyms(path: str = "/proc/kallsyms") -> Kallsyms:
    """The running kernel's symbol table; empty when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return Kallsyms.parse(f.read())
    except OSError:
        return Kallsyms([])
