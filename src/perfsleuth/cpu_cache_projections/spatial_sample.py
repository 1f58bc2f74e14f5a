"""The misses of the levels below the first, from a spatial sample of the whole
run's accesses (SHARDS: Waldspurger et al., "Efficient MRC Construction with
SHARDS", FAST '15).

A sample of 1 call in k leaves out the k - 1 calls between two traced ones, and
those calls' accesses are what the lines of a large cache are reused across:
estimating their reuse from the traced calls alone (sampled_reuse.py) put the
1-in-256 sample of uthash lookups over 20,000 entries 28% under the exact trace's
L2 misses and 35% under its LLC's. So while a sampled call is traced whole, the
other calls' accesses are kept too when their cache line is one of a fixed 1 in k
of the lines (fntrace.c's `line_selected`, `selected` below). A line is in the
sample or not for the whole run, so the sample's reuse of a line is the line's
reuse, and the distinct lines between two touches of it are 1 in k of the run's:
a cache of 1 in k of the lines, played the sample, misses 1 in k as often as the
full cache played the whole run, in expectation (SHARDS' argument).

The lines chosen are those whose number times the golden ratio falls in the first
1/k of [0, 1): over an array they fall at near-even steps, a stratified sample
that meets the array's kinds of line (a chain's head, an entry's key) in their
proportions. Chosen by a hash instead, the 1-in-256 sample of 20,000 uthash
entries put the L2 misses from -44% to +34% of the exact trace's over six hashes;
chosen so, from -10% to +4% over ten offsets.

The next-line prefetcher brings a chosen line in when the line below misses the
first level, so the line below each chosen line is kept as well, and played
through a first level of its own: its lines are another 1 in k of the lines,
their misses the prefetches of the chosen lines. (Played through the same cache,
as lines of the sample, they lacked the prefetches of the lines below them and
so took less room than they stand for: the LLC's misses came 15-20% low.)

The first level is left to the traced calls: scaled to 1 in k, a 512-line L1d
holds 2 lines, and its misses come nearly all from within a call anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

LINE_SIZE = 64  # fntrace.c's LINE_SHIFT: a trace of other lines keeps no spatial sample
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / the golden ratio

Spatial = tuple[int, int]  # (address, size) of a data access


class Cache(Protocol):
    """model.py's CacheModel, as played here."""

    sample_every: int
    shift: int
    misses: list[int]

    def access(self, line: int) -> int: ...

    def prefetch(self, line: int) -> None: ...


def place(line: int, every: int, sets: int) -> int:
    """The set of a scaled cache a line of the sample maps to: where its product with
    the golden ratio falls in the sample's 1/every of [0, 1). The sample's lines
    spread as evenly over the sets as an array's lines over a cache's by their low
    bits, where a hash would crowd some sets (a sample of 5,000 uthash entries at 1
    in 64 had up to 40% more L2 misses than the exact trace, whose L2 holds them)."""
    return ((line * GOLDEN) & MASK) * every * sets >> 64


def selected(line: int, every: int) -> bool:
    """Whether the line is one of the 1 in `every` the spatial sample keeps: those
    whose number times the golden ratio falls in the first 1/every of [0, 1) (as
    fntrace.c's `line_selected`). That spreads them at even steps over an array, a
    stratified sample, which meets its lines' kinds (a chain's head, an entry's
    key) in their proportions."""
    return (line * GOLDEN) & MASK <= MASK // every


def kept(address: int, size: int, shift: int, every: int) -> bool:
    """Whether the access touches a line of the sample."""
    first, last = address >> shift, (address + size - 1) >> shift
    return any(selected(line, every) for line in range(first, last + 2))


def thinned(accesses: Iterable[Spatial], shift: int, every: int) -> list[Spatial]:
    """The accesses still in the sample at 1 in `every`."""
    return [(address, size) for address, size in accesses if kept(address, size, shift, every)]


def misses_per_call(
    accesses: Iterable[Spatial], cache: Cache, below: Cache, calls: int
) -> list[float]:
    """Per level, the misses per call of the whole run the sample estimates.

    `cache`: the hierarchy scaled to 1 in k lines, played the chosen lines (its
    prefetches kept to them); `below`: its first level alone, played the lines
    below them, a sample of its own: each miss there brings the chosen line above
    into `cache`'s lower levels, as the prefetcher does (model.py)."""
    every = cache.sample_every
    counted = [0] * len(cache.misses)
    for address, size in accesses:
        for line in range(address >> cache.shift, ((address + size - 1) >> cache.shift) + 1):
            if selected(line, every):
                for level in range(cache.access(line)):
                    counted[level] += 1
            elif selected(line + 1, every) and below.access(line):
                cache.prefetch(line + 1)
    return [count * every / max(calls, 1) for count in counted]
