"""A set-associative LRU cache hierarchy with a next-line prefetcher.

Each level is looked up in turn; a miss fills every level that missed (a
non-inclusive, fill-on-miss hierarchy). On a demand miss in the first level the
prefetcher also installs the next line, uncounted, in every level but the first:
the adjacent-line prefetchers of current cores (Intel's L2 spatial prefetcher,
AMD's L2 up/down prefetcher) fill the L2 and what lies below it, not the L1d.
With a single level the prefetcher fills it.

In the level it fills first (the L2) a prefetched line enters a quarter of the
way up its set's LRU order, not at the top, and so takes the room of about half a
line (PREFETCHED_ROOM): it is evicted before the lines the code touched. Measured on
an AMD EPYC (Zen 4) guest with the connection tables of examples/cache
(bench/cache_cliff.py): a struct whose code touches one line per object
overflows the L1d at the demand lines alone (512 objects for 512 lines) and the
L2 at 1.53 lines per object (16,384 lines at 10,700 objects), not at the 2 of
the line and its neighbour; the struct with two hot lines and a cold neighbour
at 2.53 lines (6,478 objects), not 3. The LLC below it, filled on this CPU with
what the L2 evicts, holds every neighbour whole: its knees fall where the line
and its neighbour, at full room, overflow it (within 13% in 11 of 12 readings).
The default geometry is this machine's data caches, read from sysfs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..model.cpu_cache import GeometrySpec, Simulation
from . import spatial_sample
from .sampled_reuse import SampledReuse
from .trace import Trace

SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
FALLBACK = "line=64,L1d=32K:8,L2=512K:8,LLC=8M:16"
SPEC_HELP = "line=64,L1d=32K:8,L2=512K:8,LLC=32M:16[,prefetch=none]"
# A prefetched line enters the level the prefetcher fills first this far up its
# set's LRU order (0: where the next eviction takes it, 1: the top) ...
PREFETCH_ENTRY = 0.25
# ... where, under random access, a line nobody touches takes this share of a
# touched line's room (simulated: the knees of one hot line and a neighbour per
# object at 1.49 lines, of two and a neighbour at 2.52; the cliffs use it)
PREFETCHED_ROOM = 0.5


@dataclass(frozen=True)
class Level:
    name: str
    size: int  # bytes
    ways: int

    def lines(self, line_size: int) -> int:
        return self.size // line_size


@dataclass(frozen=True)
class Geometry:
    line_size: int
    levels: tuple[Level, ...]
    prefetch: bool = True

    def describe(self) -> str:
        parts = [f"{lv.name} {human_size(lv.size)} {lv.ways}-way" for lv in self.levels]
        low = f" (low in the {self.levels[1].name}'s LRU order)" if len(self.levels) > 1 else ""
        prefetch = f", next-line prefetch{low}" if self.prefetch else ""
        return f"{', '.join(parts)}, {self.line_size} B lines, LRU{prefetch}"

    def scaled(self, part: float) -> Geometry:
        """Each level holding `part` of its lines: as many sets of its ways as that
        makes, or one set of that many lines when that is less than a set."""
        levels = []
        for level in self.levels:
            lines = level.lines(self.line_size)
            sets = round(lines // level.ways * part)
            ways = level.ways if sets else max(1, round(lines * part))
            levels.append(Level(level.name, max(sets, 1) * ways * self.line_size, ways))
        return Geometry(self.line_size, tuple(levels), self.prefetch)

    def to_json(self) -> GeometrySpec:
        return {
            "line_size": self.line_size,
            "prefetch": self.prefetch,
            "levels": [{"name": lv.name, "size": lv.size, "ways": lv.ways} for lv in self.levels],
        }


def human_size(size: int) -> str:
    for unit, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*([KMG]?)B?", text.strip(), re.IGNORECASE)
    if not match:
        raise UserError(f"cache size {text!r}: write it like 32K or 8M")
    return int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2].upper()]


def parse_spec(spec: str) -> Geometry:
    """`line=64,L1d=32K:8,L2=512K:8,LLC=32M:16,prefetch=none` -> Geometry."""
    line_size, prefetch, levels = 64, True, []
    for item in filter(None, (p.strip() for p in spec.split(","))):
        key, _, value = item.partition("=")
        if key == "line":
            line_size = int(value) if value.isdigit() else 0
        elif key == "prefetch":
            prefetch = value != "none"
        elif ":" in value:
            size, ways = value.split(":", 1)
            levels.append(Level(key, parse_size(size), int(ways) if ways.isdigit() else 0))
        else:
            raise UserError(
                f"--cache-model {spec!r}: {item!r} is not NAME=SIZE:WAYS; e.g. {SPEC_HELP}"
            )
    if line_size <= 0 or line_size & (line_size - 1) or not levels:
        raise UserError(
            f"--cache-model {spec!r}: give a power-of-two line and levels, e.g. {SPEC_HELP}"
        )
    for level in levels:
        if level.ways <= 0 or level.size % (level.ways * line_size):
            raise UserError(f"--cache-model: {level.name} size must be a multiple of ways x line")
    return Geometry(line_size, tuple(levels), prefetch)


def machine_geometry(root: Path = SYSFS_CACHES) -> Geometry:
    """This machine's data/unified caches from sysfs; a common geometry without sysfs."""
    levels, line_size = [], 64
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
            ways = int((index / "ways_of_associativity").read_text())
            line_size = int((index / "coherency_line_size").read_text())
        except (OSError, ValueError, UserError):
            continue
        if kind in ("Data", "Unified"):
            levels.append((level, Level("L1d" if level == 1 else f"L{level}", size, ways)))
    if not levels:
        return parse_spec(FALLBACK)
    ordered = [lv for _, lv in sorted(levels, key=lambda item: item[0])]
    last = ordered[-1]
    ordered[-1] = Level("LLC", last.size, last.ways) if len(ordered) > 2 else last
    return Geometry(line_size, tuple(ordered))


class CacheModel:
    """Simulates accesses; `access(line)` returns the index of the level that hit
    (len(levels) for memory). With `sample_every` k > 1 it plays a spatial sample
    of 1 in k lines (spatial_sample.py): its prefetches keep to the sample's lines."""

    def __init__(self, geometry: Geometry, sample_every: int = 1) -> None:
        self.geometry = geometry
        self.sample_every = sample_every
        self.shift = geometry.line_size.bit_length() - 1
        self.set_counts = [lv.size // (lv.ways * geometry.line_size) for lv in geometry.levels]
        self.sets: list[list[list[int]]] = [[[] for _ in range(n)] for n in self.set_counts]
        self.misses = [0] * len(geometry.levels)
        self.accesses = 0
        self.filled: set[int] = set()  # distinct lines ever brought in, demand or prefetch
        self.touched: set[int] = set()  # distinct lines the code accessed
        # accesses to a line never brought in before: a miss in every level, however
        # large, because the model starts empty (a program's own earlier touches of
        # the line, as its fill of a table, are not in the trace)
        self.first_touches = 0
        self.prefetch_from = 1 if len(geometry.levels) > 1 else 0
        self.prefetched: set[int] = set()  # lines prefetched since last cleared

    def observe(self, address: int, size: int) -> None:
        first, last = address >> self.shift, (address + size - 1) >> self.shift
        for line in range(first, last + 1):
            self.access(line)

    def access(self, line: int) -> int:
        self.accesses += 1
        self.first_touches += line not in self.filled
        self.touched.add(line)
        hit = len(self.set_counts)
        for level in range(len(self.set_counts)):
            if self._lookup(level, line):
                hit = level
                break
            self.misses[level] += 1
        for level in range(hit):
            self._fill(level, line)
        if hit == len(self.set_counts):
            self.filled.add(line)
        if hit:
            self.prefetch(line + 1)
        return hit

    def _set(self, level: int, line: int) -> list[int]:
        """The set of the level the line maps to: by its number's low bits, or in a
        spatial sample by its place in it (spatial_sample.place)."""
        count = self.set_counts[level]
        if self.sample_every > 1:
            return self.sets[level][spatial_sample.place(line, self.sample_every, count)]
        return self.sets[level][line % count]

    def _lookup(self, level: int, line: int) -> bool:
        ways = self._set(level, line)
        if line in ways:
            ways.remove(line)
            ways.append(line)
            return True
        return False

    def _fill(self, level: int, line: int) -> None:
        ways = self._set(level, line)
        if line in ways:
            ways.remove(line)
        elif len(ways) >= self.geometry.levels[level].ways:
            ways.pop(0)
        ways.append(line)

    def prefetch(self, line: int) -> None:
        """The next-line prefetcher brings the line in (a first level's miss of the
        line below); nothing without a prefetcher (`prefetch=none`), whoever asks:
        the spatial sample plays the lines below its own."""
        if not self.geometry.prefetch:
            return
        if self.sample_every > 1 and not spatial_sample.selected(line, self.sample_every):
            return
        self.filled.add(line)
        self.prefetched.add(line)
        whole_from = self.prefetch_from
        if self.prefetch_from:  # the L2 of several levels: low in its LRU order
            self._fill_low(self.prefetch_from, line)
            whole_from += 1
        for level in range(whole_from, len(self.set_counts)):
            self._fill(level, line)

    def _fill_low(self, level: int, line: int) -> None:
        """A prefetch into the level it fills first: a line not there yet enters low
        in its set's LRU order (PREFETCH_ENTRY), where a line touched enters at the
        top."""
        ways = self._set(level, line)
        if line in ways:
            return
        if len(ways) >= self.geometry.levels[level].ways:
            ways.pop(0)
        ways.insert(round(len(ways) * PREFETCH_ENTRY), line)


def simulate(trace: Trace, geometry: Geometry) -> Simulation:
    """Misses per level for each recorded call (the cache warm across calls, as in
    the run) and per source line, under the model. Of calls sampled over the run,
    a line's first touch in a call hits with the probability sampled_reuse.py
    estimates: the calls left out between two traced ones would have kept it."""
    model = CacheModel(geometry)
    sampled = SampledReuse(trace, model.shift) if trace.chosen != "first" else None
    names = [lv.name for lv in geometry.levels]
    windows = sampled_windows(sampled, geometry) if sampled else []
    rooms = prefetched_rooms(geometry)
    per_call: list[list[float]] = []
    by_source: dict[str, dict[str, float]] = {}
    split = [0.0] * len(names)
    for index, call in enumerate(trace.calls):
        position = (index + 0.5) / len(trace.calls)
        seen: set[int] = set()
        model.prefetched.clear()
        in_call = [0.0] * len(names)
        for kind, address, size, pc in call:
            if kind == "I":
                continue
            first = first_touches(model, address, size, seen) if sampled else set()
            missed = access_misses(model, address, size, first)
            for line in first:
                assert sampled is not None
                for level, window in enumerate(windows):
                    # brought in by this call's touch of the line below
                    if rooms[level] and line in model.prefetched:
                        continue
                    missed[level] += 1 - sampled.hit(line, window, position, rooms[level])
            if (address ^ (address + size - 1)) >> model.shift:  # crosses a line boundary
                for level, m in enumerate(missed):
                    split[level] += max(0.0, m - 1)
            where = trace.source_of(pc) or f"0x{pc - trace.base:x}"
            counter = by_source.setdefault(where, {"accesses": 0, **dict.fromkeys(names, 0.0)})
            counter["accesses"] += 1
            for level, name in enumerate(names):
                counter[name] += missed[level]
                in_call[level] += missed[level]
        per_call.append(in_call)
    fresh = None if sampled else model.first_touches / max(len(per_call), 1)
    traced = [sum(c[i] for c in per_call) for i in range(len(names))]
    if trace.spatial and len(names) > 1:
        estimates, fresh = spatial_estimates(trace, geometry)
        below_first(estimates, per_call, by_source, names)
    totals = [sum(c[i] for c in per_call) for i in range(len(names))]
    calls = max(len(per_call), 1)
    # the levels the spatial sample estimates: their share of the traced calls' misses
    split = [s * t / m if m else 0.0 for s, t, m in zip(split, totals, traced, strict=True)]
    return {
        "geometry": geometry.to_json(),
        "describe": geometry.describe(),
        "accesses": model.accesses,
        "misses": dict(zip(names, totals, strict=True)),
        "misses_per_call": {name: total / calls for name, total in zip(names, totals, strict=True)},
        "first_touches_per_call": fresh,
        "split_misses_per_call": {
            name: value / calls for name, value in zip(names, split, strict=True)
        },
        "per_call": per_call,
        "by_source": by_source,
    }


def spatial_estimates(trace: Trace, geometry: Geometry) -> tuple[list[float], float]:
    """Per level, the misses per call of the whole run its spatial sample gives, and
    the first touches of lines per call among them."""
    every = trace.sample_every
    scaled = geometry.scaled(1 / every)
    cache = CacheModel(scaled, every)
    below = CacheModel(Geometry(geometry.line_size, scaled.levels[:1], prefetch=False))
    estimates = spatial_sample.misses_per_call(trace.spatial, cache, below, trace.total_calls)
    return estimates, cache.first_touches * every / max(trace.total_calls, 1)


def below_first(
    estimates: list[float],
    per_call: list[list[float]],
    by_source: dict[str, dict[str, float]],
    names: list[str],
) -> None:
    """The levels below the first take their misses per call from the spatial
    sample's `estimates`, shared out over the traced calls and source lines as the
    traced calls' own estimate shares them (evenly over the accesses where that
    has none)."""
    calls = max(len(per_call), 1)
    accesses = sum(counter["accesses"] for counter in by_source.values()) or 1
    for level in range(1, len(names)):
        total = sum(call[level] for call in per_call)
        target = estimates[level] * calls
        for call in per_call:
            call[level] = call[level] * target / total if total else target / calls
        for counter in by_source.values():
            share = counter[names[level]] / total if total else counter["accesses"] / accesses
            counter[names[level]] = share * target


def prefetched_rooms(geometry: Geometry) -> list[float]:
    """Per level, the room a line the prefetcher brought in takes there, as a share
    of a line's; 0 in a level it does not fill."""
    if not geometry.prefetch:
        return [0.0] * len(geometry.levels)
    if len(geometry.levels) == 1:
        return [1.0]
    return [0.0, PREFETCHED_ROOM, *[1.0] * (len(geometry.levels) - 2)]


def sampled_windows(sampled: SampledReuse, geometry: Geometry) -> list[float]:
    """Per level, the calls whose lines it holds: the levels the prefetcher fills
    hold the neighbours of the lines too."""
    return [
        sampled.window(level.lines(geometry.line_size) / (1 + room * sampled.neighbours))
        for level, room in zip(geometry.levels, prefetched_rooms(geometry), strict=True)
    ]


def first_touches(model: CacheModel, address: int, size: int, seen: set[int]) -> set[int]:
    """The lines of this access the call had not touched yet (now marked touched)."""
    lines = set(range(address >> model.shift, ((address + size - 1) >> model.shift) + 1))
    first = lines - seen
    seen.update(lines)
    return first


def access_misses(model: CacheModel, address: int, size: int, estimated: set[int]) -> list[float]:
    """The model's misses per level for the lines of one access, less those of the
    lines in `estimated` (their outcome is estimated elsewhere; the model still
    brings them in, so that the call's later accesses find them)."""
    missed = [0.0] * len(model.misses)
    for line in range(address >> model.shift, ((address + size - 1) >> model.shift) + 1):
        before = list(model.misses)
        model.access(line)
        if line not in estimated:
            for level, old in enumerate(before):
                missed[level] += model.misses[level] - old
    return missed
