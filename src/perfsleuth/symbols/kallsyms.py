"""Kernel addresses -> symbol names, from /proc/kallsyms."""

from __future__ import annotations

import bisect
import os
import re
from array import array
from functools import lru_cache

# "ffffffff81000000 T _stext" or "ffffffffc0a01000 t fn\t[module]"; text symbols only
_TEXT = re.compile(rb"^([0-9a-f]+) [tT] _text$", re.M)
_LINE = re.compile(rb"^([0-9a-f]+) [tTwW] (\S+)(?:\t\[(\S+)\])?$", re.M)


class Kallsyms:
    """A sorted kernel symbol table; `lookup(addr)` gives (name, module).

    Compact: the raw text plus two arrays (address, line offset), names are
    decoded only when looked up (/proc/kallsyms has ~100k-200k lines).
    """

    def __init__(self, entries: list[tuple[int, str, str]]) -> None:
        text = "".join(
            f"{a:016x} T {n}" + (f"\t[{m}]" if m else "") + "\n" for a, n, m in sorted(entries)
        ).encode()
        self._load(text)

    @classmethod
    def parse(cls, text: str | bytes) -> Kallsyms:
        data = text.encode() if isinstance(text, str) else text
        k = cls.__new__(cls)
        k._load(data)
        return k

    def _load(self, data: bytes) -> None:
        self._data = data
        pairs = [
            (int(m.group(1), 16), m.start()) for m in _LINE.finditer(data) if m.group(1).strip(b"0")
        ]
        pairs.sort()
        self._addrs = array("Q", (a for a, _ in pairs))
        self._offsets = array("Q", (o for _, o in pairs))
        t = _TEXT.search(data)
        self.text = int(t.group(1), 16) if t else None

    @property
    def usable(self) -> bool:
        """False when addresses are hidden (kptr_restrict) or nothing was read."""
        return len(self._addrs) > 0

    def lookup(self, addr: int) -> tuple[str, str] | None:
        """(symbol, module or '') of the function containing addr; None if below all."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        m = _LINE.match(self._data, self._offsets[i])
        if m is None:  # pragma: no cover - offsets come from the same regex
            return None
        module = m.group(3) or b""
        return m.group(2).decode("utf-8", "replace"), module.decode("utf-8", "replace")


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
    for path in kallsyms_candidates(build_id, release):
        k = load_kallsyms(path)
        if path == "/proc/kallsyms" and text_addr and k.text and k.text != text_addr:
            break
        if k.usable:
            return k
    return Kallsyms([])


def kallsyms_candidates(build_id: str = "", release: str = "") -> list[str]:
    """kallsyms files to try for a recording, best first (see kernel_symbols)."""
    out = []
    if build_id:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        cached = os.path.join(home, ".debug", "[kernel.kallsyms]", build_id, "kallsyms")
        if os.path.isfile(cached):
            out.append(cached)
    if not release or release == os.uname().release:
        out.append("/proc/kallsyms")
    return out
