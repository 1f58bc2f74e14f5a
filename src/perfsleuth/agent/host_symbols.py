"""Symbolization on the host, once per build-id and address, across windows.

The agent symbolizes, not the collector: the host has the very binaries and
debug info its processes run (the collector would need every host's files),
and a window's addresses mostly repeat the previous window's, so a cache that
lives as long as the agent makes each window's work the few new addresses only.
Frames that cannot be named keep their DSO and offset (formats.perf_data).

Near its CPU cap the agent stops naming new addresses (`defer_new`): naming a new
program's addresses is most of a loaded host's agent cost (llvm-symbolizer, and each
new DSO's .dynsym read for its aliases). Those frames then travel as perf_data's
unknown frames do, "[unknown] dso+0xSTART" with their build-id and ELF address, which
`perfsleuth symbols upload` or debuginfod name at query time (store/fleet/symbols.py);
answers already cached are still used, and the deferred addresses are asked again once
the agent is back within its budget.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterable

from ..binaries import build_id_of
from ..model.profile import Frame
from ..symbols import UNKNOWN, Symbolizer
from ..symbols.symbolizer import dso_name, dynsym, elf_symbols

# About 200 bytes an entry: bounds the cache near 40 MB on a host that runs
# very many distinct binaries; cleared when full (it refills in a window or two).
MAX_ENTRIES = 200_000


class HostSymbolizer(Symbolizer):
    """A Symbolizer that remembers every answer, keyed by build-id (or path) and address."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        super().__init__()
        self.max_entries = max_entries
        self.user: dict[tuple[str, str, int], tuple[Frame, ...]] = {}
        self.kernel: dict[int, Frame] = {}
        self.lookups = 0  # addresses asked of the tools, for the agent's metrics
        self.defer_new = False  # new addresses left unnamed (the agent's CPU budget)
        self.deferred = 0  # addresses shipped unnamed for it, for the agent's metrics

    def symbolize_offsets(
        self, items: Iterable[tuple[str, str, int]]
    ) -> dict[tuple[str, int], tuple[Frame, ...]]:
        # perf records without its build-id pass (collect.system_wide): the key
        # takes the file's own build-id, read once per path (binaries caches it).
        items = [(p, b or _file_build_id(p), o) for p, b, o in items]
        self._make_room(len(items))
        new = [(p, b, o) for p, b, o in set(items) if (p, b, o) not in self.user]
        if new and self.defer_new:
            self.deferred += len(new)
            unnamed = {(p, b, o): (Frame(UNKNOWN, dso=dso_name(p)),) for p, b, o in new}
            return {(p, o): self.user.get((p, b, o)) or unnamed[(p, b, o)] for p, b, o in items}
        if new:
            self.lookups += len(new)
            answers = super().symbolize_offsets(new)
            for path, bid, offset in new:
                self.user[(path, bid, offset)] = answers[(path, offset)]
        return {(p, o): self.user[(p, b, o)] for p, b, o in items}

    def _llvm(self, unique: list[tuple[str, int]]) -> dict[tuple[str, int], list[dict]]:
        """One llvm-symbolizer for every object of the window, not one per object.

        The agent wants CPU, not latency: each run starts by loading libLLVM,
        and a window's new addresses span about a dozen objects. On a replay of
        seven windows of this machine: 3.7 s of llvm-symbolizer CPU in per-object
        runs, 1.5 s in one run per window. (A process kept across windows needed
        only 0.3 s, but held 93 MB of its own memory, past the agent's budget.)
        """
        plain = [(real, vaddr) for real, vaddr in unique if '"' not in real]
        found = self._llvm_objects(plain) if plain else {}
        odd = [key for key in unique if '"' in key[0]]  # a name the query syntax cannot quote
        return found | (super()._llvm(odd) if odd else {})

    def kernel_frames(
        self,
        addrs: Iterable[int],
        *,
        build_id: str = "",
        release: str = "",
        text_addr: int | None = None,
    ) -> dict[int, Frame]:
        wanted = set(addrs)
        self._make_room(len(wanted))
        new = wanted - self.kernel.keys()
        if new:
            self.lookups += len(new)
            found = super().kernel_frames(
                new, build_id=build_id, release=release, text_addr=text_addr
            )
            self.kernel.update(found)
        return {a: self.kernel[a] for a in wanted}

    def forget(self) -> None:
        """Drop every answer and per-DSO table, and give the memory back to the system.

        The tables (function aliases, ELF layouts) are what lets a window
        symbolize only its new addresses; past the agent's memory budget they
        go and refill from the next windows.
        """
        self.user.clear()
        self.kernel.clear()
        self.resolved.clear()
        dynsym.cache_clear()
        elf_symbols.cache_clear()
        gc.collect()
        trim_heap()

    def _make_room(self, n: int) -> None:
        if len(self.user) + len(self.kernel) + n > self.max_entries:
            self.user.clear()
            self.kernel.clear()


def _file_build_id(path: str) -> str:
    return build_id_of(path) if path.startswith("/") else ""


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc).

    A window's transient objects (the reader's columns, llvm-symbolizer's
    answers, read in worker threads with heaps of their own) leave free pages
    that glibc keeps: trimming after each window took the agent from 101 to
    80 MB of anonymous memory on 4,000 distinct addresses, in about 1 ms.
    """
    ctypes.CDLL(None).malloc_trim(0)
