"""Symbolization on the host, once per build-id and address, across windows.

The agent symbolizes, not the collector: the host has the very binaries and
debug info its processes run (the collector would need every host's files),
and a window's addresses mostly repeat the previous window's, so a cache that
lives as long as the agent makes each window's work the few new addresses only.
Frames that cannot be named keep their DSO and offset (formats.perf_data).

Naming is paced by the agent's CPU budget (`name_limit`, set for each window):
naming a new program's addresses is most of a loaded host's agent cost (llvm-symbolizer
loads each file's DWARF, .dynsym is read for aliases), and on a busy host it is more
than the whole 1% budget each window. A window names at most `name_limit` new addresses,
the most sampled first (perf_data asks them in that order); the others travel as perf_data's
unknown frames do, "[unknown] dso+0xSTART" with their build-id and ELF address, which
`perfsleuth symbols upload` or debuginfod name at query time (store/fleet/symbols.py).
They are not cached, so the next windows that meet them name them as the budget allows:
the first window's naming of every program on the host is spread over the first
minutes instead of one window taking seconds of CPU. The limit comes from the CPU the
agent has to spare and what naming an address has cost it so far (`cost_per_address`).
Named answers also go to disk by build-id (agent/symbol_cache.py), so a restarted agent
does not name its host's programs again.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterable

from ..binaries import build_id_of
from ..model.profile import Frame
from ..symbols import UNKNOWN, Symbolizer
from ..symbols.symbolizer import dso_name, dynsym, elf_symbols
from .overhead import own_cpu
from .symbol_cache import SymbolCache

# About 200 bytes an entry: bounds the cache near 40 MB on a host that runs
# very many distinct binaries; cleared when full (it refills in a window or two).
MAX_ENTRIES = 200_000
# What naming a new address costs (the agent's CPU and llvm-symbolizer's) until the agent
# has measured its own over MEASURED_AFTER addresses: 0.2-0.9 ms replaying windows of this
# busy 2-CPU machine, the most in the first windows (each file's DWARF loaded once a run),
# where a live agent's first window paid 1.4-1.5 ms an address (0.5 CPU-s for ~370 at
# load ~15, 0.4 for ~260 at load ~10): at 0.5 ms, its first window's naming alone was
# 0.4-0.5 CPU-s, 1% of a 2-CPU host for 20-25 s.
PRIOR_S_PER_ADDRESS = 0.0015
MEASURED_AFTER = 200


class HostSymbolizer(Symbolizer):
    """A Symbolizer that remembers every answer, keyed by build-id (or path) and address."""

    def __init__(self, max_entries: int = MAX_ENTRIES, cache: SymbolCache | None = None) -> None:
        super().__init__()
        self.max_entries = max_entries
        self.cache = cache
        self.user: dict[tuple[str, str, int], tuple[Frame, ...]] = {}
        self.kernel: dict[int, Frame] = {}
        self.from_disk: set[tuple[str, str]] = set()  # (path, build-id) read from the cache
        self.lookups = 0  # addresses asked of the tools, for the agent's metrics
        self.name_limit: int | None = None  # new addresses the next window may name
        self.deferred = 0  # addresses shipped unnamed for it, for the agent's metrics
        self.deferred_last = 0  # of them, in the latest window
        self.named = 0  # user-space addresses named by the tools
        self.naming_cpu_s = 0.0  # what naming them cost, the tools' CPU included

    def symbolize_offsets(
        self, items: Iterable[tuple[str, str, int]]
    ) -> dict[tuple[str, int], tuple[Frame, ...]]:
        # perf records without its build-id pass (collect.system_wide): the key
        # takes the file's own build-id, read once per path (binaries caches it).
        items = list(items)
        ids = {(p, b): b or _file_build_id(p) for p, b in {(p, b) for p, b, _ in items}}
        items = [(p, ids[(p, b)], o) for p, b, o in items]
        self._make_room(len(items))
        self._read_saved(items)
        new = [item for item in dict.fromkeys(items) if item not in self.user]
        asked, left = self._within_limit(new)
        if asked:
            self._name(asked)
        self.deferred += len(left)
        self.deferred_last = len(left)
        return {
            (p, o): self.user.get((p, b, o)) or (Frame(UNKNOWN, dso=dso_name(p)),)
            for p, b, o in items
        }

    def cost_per_address(self) -> float:
        """CPU seconds naming one new address has cost (a prior until measured)."""
        if self.named < MEASURED_AFTER:
            return PRIOR_S_PER_ADDRESS
        # os.times() counts in 10 ms ticks: hundreds of cheap addresses can measure 0
        return max(self.naming_cpu_s / self.named, PRIOR_S_PER_ADDRESS / 10)

    def _within_limit(
        self, new: list[tuple[str, str, int]]
    ) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
        """(to name now, to leave unnamed): the first `name_limit` addresses, in the
        order asked (perf_data asks the most sampled first)."""
        if self.name_limit is None:
            return new, []
        take = max(0, self.name_limit)
        self.name_limit = take - min(take, len(new))
        return new[:take], new[take:]

    def _name(self, asked: list[tuple[str, str, int]]) -> None:
        """Ask the tools; remember the answers, and keep the named ones on disk."""
        began = own_cpu()
        answers = super().symbolize_offsets(asked)
        self.naming_cpu_s += own_cpu() - began
        self.lookups += len(asked)
        self.named += len(asked)
        kept: dict[str, list[tuple[int, tuple[Frame, ...]]]] = {}
        for path, bid, offset in asked:
            chain = self.user[(path, bid, offset)] = answers[(path, offset)]
            if bid and chain and chain[-1].function != UNKNOWN:
                kept.setdefault(bid, []).append((offset, chain))
        if self.cache is not None:
            for bid, chains in kept.items():
                self.cache.add(bid, chains)

    def _read_saved(self, items: list[tuple[str, str, int]]) -> None:
        """The disk's answers for each (file, build-id) met for the first time."""
        if self.cache is None:
            return
        for path, bid in {(p, b) for p, b, _ in items if b} - self.from_disk:
            self.from_disk.add((path, bid))
            for offset, chain in self.cache.load(bid, dso_name(path)).items():
                self.user[(path, bid, offset)] = chain

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
        self.from_disk.clear()
        self.resolved.clear()
        dynsym.cache_clear()
        elf_symbols.cache_clear()
        gc.collect()
        trim_heap()

    def _make_room(self, n: int) -> None:
        if len(self.user) + len(self.kernel) + n > self.max_entries:
            self.user.clear()
            self.kernel.clear()
            self.from_disk.clear()


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
