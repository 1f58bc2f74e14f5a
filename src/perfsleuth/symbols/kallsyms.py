"""Kernel addresses -> symbol names, from /proc/kallsyms."""

from __future__ import annotations

import bisect
import os
import re
from functools import lru_cache

# "ffffffff81000000 T _stext" or "ffffffffc0a01000 t fn\t[module]"; text symbols only
_LINE = re.compile(rb"^([0-9a-f]+) [tTwW] (\S+)(?:\t\[(\S+)\])?$", re.M)


class Kallsyms:
    """A sorted kernel symbol table; `lookup(addr)` gives (name, module)."""

    def __init__(self, entries: list[tuple[int, str, str]]) -> None:
        entries.sort()
        self.text = next((a for a, n, _ in entries if n == "_text"), None)
        self._addrs = [a for a, _, _ in entries]
        self._entries = entries

    @classmethod
    def parse(cls, text: str | bytes) -> Kallsyms:
        data = text.encode() if isinstance(text, str) else text
        entries = [
            (int(a, 16), n.decode("utf-8", "replace"), m.decode("utf-8", "replace"))
            for a, n, m in _LINE.findall(data)
        ]
        return cls([e for e in entries if e[0]])

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
        with open(path, "rb", buffering=1 << 20) as f:
            return Kallsyms.parse(f.read())
    except OSError:
        return Kallsyms([])


def kernel_symbols(build_id: str = "", release: str = "", text_addr: int | None = None) -> Kallsyms:
    """The kallsyms matching a recording's kernel.

    perf's build-id cache (~/.debug/[kernel.kallsyms]/<build-id>/kallsyms, saved
    by perf record) first; else /proc/kallsyms when the recording was made on
    this kernel (same release and, when known, same _text address, i.e. the
    same KASLR slide); else an empty table (kernel frames stay [unknown]).
    """
    if build_id:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        cached = os.path.join(home, ".debug", "[kernel.kallsyms]", build_id, "kallsyms")
        if os.path.isfile(cached):
            k = load_kallsyms(cached)
            if k.usable:
                return k
    if release and release != os.uname().release:
        return Kallsyms([])
    k = load_kallsyms()
    if text_addr is not None and k.text is not None and k.text != text_addr:
        return Kallsyms([])
    return k
