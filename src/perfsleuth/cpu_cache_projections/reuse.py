"""How far past a level's capacity the lines a function touches can grow before
its misses begin: the knee of the miss curve of the function's own accesses,
from their reuse times.

Lines accessed uniformly at random miss in an LRU cache of C lines 1 - C/W of
the time once there are W > C of them: the cliff is where the lines touched
reach the capacity. Not every working set is uniform. A uthash lookup passes the
handles of its bucket's chain (an entry near a chain's head on many lookups) and
reads the key of the one entry it stops at (each entry's key line on one lookup
in n): lines touched that rarely miss whatever the cache holds, and the latency
rises where the often-passed lines overflow it, later than the lines touched say
(uthash's L1d: measured at 400 entries, where the lines touched cross its
capacity at 335).

The miss curve comes from the reuse times of the run's accesses (the accesses
between two to the same line), by the footprint theory of Xiang et al. (HOTL,
ASPLOS 2013): fp(w), the mean number of distinct lines in a window of w
accesses, and the miss ratio of a fully associative LRU cache of fp(w) lines,
fp(w + 1) - fp(w). As the scaling projection assumes (the working set at n is
the one at n0 grown in proportion), a cache of C lines at n misses as one of
C * W0 / W(n) lines at n0: over x = W0 / C the curve has the shape the latency
has over n. Its knee x* (knee.py, the estimator the benchmark measures knees
with) is 1 for uniform access; the cliff is where the lines touched reach x*
times the capacity (`reuse_factor`)."""

from __future__ import annotations

import bisect
import itertools
import math

from .knee import knee

POINTS_PER_DOUBLING = 16
# x = W0 / C from the working set at twice a cache's size to eight times it
LOWEST, HIGHEST = 0.5, 8.0
MIN_ACCESSES = 1000  # fewer reuse nothing worth a curve


class ReuseTimes:
    """Watches a run's data accesses (an observer of the recorder, like the cache
    model) and keeps, per line, its first and last access, and the histogram of
    the reuse times."""

    def __init__(self, line_size: int) -> None:
        self.shift = line_size.bit_length() - 1
        self.clock = 0
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.reuses: dict[int, int] = {}  # reuse time -> accesses

    def observe(self, address: int, size: int) -> None:
        for line in range(address >> self.shift, ((address + size - 1) >> self.shift) + 1):
            self.access(line)

    def access(self, line: int) -> None:
        self.clock += 1
        previous = self.last.get(line)
        if previous is None:
            self.first[line] = self.clock
        else:
            gap = self.clock - previous
            self.reuses[gap] = self.reuses.get(gap, 0) + 1
        self.last[line] = self.clock

    def factor(self) -> float | None:
        """x*, the knee of the miss curve over x = lines / capacity; None for a run
        too short to say."""
        if self.clock < MIN_ACCESSES or not self.reuses:
            return None
        return knee(miss_curve(Footprint(self)))


class Footprint:
    """fp(w) of one run (HOTL): m - (sum over reuse times t > w of (t - w), and over
    the lines' first access times f > w of (f - w) and times from the last access
    to the end l' > w of (l' - w)) / (n - w + 1), n accesses and m lines."""

    def __init__(self, times: ReuseTimes) -> None:
        n = self.accesses = times.clock
        self.lines = len(times.first)
        weights: dict[int, int] = dict(times.reuses)
        tails = itertools.chain(times.first.values(), (n + 1 - t for t in times.last.values()))
        for value in tails:
            weights[value] = weights.get(value, 0) + 1
        self.values = sorted(weights)
        # suffix sums of the counts and of value * count, from each value up
        counts = [weights[v] for v in self.values]
        self.count_above = [*itertools.accumulate(reversed(counts))][::-1] + [0]
        sums = [v * c for v, c in zip(self.values, counts, strict=True)]
        self.sum_above = [*itertools.accumulate(reversed(sums))][::-1] + [0]

    def at(self, window: float) -> float:
        start = bisect.bisect_right(self.values, window)
        beyond = self.sum_above[start] - window * self.count_above[start]
        return self.lines - beyond / (self.accesses - window + 1)

    def window(self, lines: float) -> float:
        """The window w whose footprint is `lines` (below the run's lines)."""
        low, high = 1.0, float(self.accesses)
        for _ in range(60):
            middle = (low + high) / 2
            low, high = (middle, high) if self.at(middle) < lines else (low, middle)
        return low

    def miss_ratio(self, lines: float) -> float:
        """Of a fully associative LRU cache of `lines` lines: fp' where fp = lines."""
        if lines >= self.lines:
            return 0.0
        w = self.window(lines)
        step = max(1.0, w / 64)
        return max(0.0, (self.at(w + step) - self.at(w)) / step)


def miss_curve(footprint: Footprint) -> list[tuple[float, float]]:
    """(x, miss ratio) at the cache of lines / x lines, x from LOWEST to HIGHEST."""
    steps = round(math.log2(HIGHEST / LOWEST) * POINTS_PER_DOUBLING)
    xs = (LOWEST * 2 ** (k / POINTS_PER_DOUBLING) for k in range(steps + 1))
    return [(x, footprint.miss_ratio(footprint.lines / x)) for x in xs]
