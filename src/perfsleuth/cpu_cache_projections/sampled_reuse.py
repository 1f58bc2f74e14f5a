"""Whether a sampled call's first touch of a line hits, estimated from how often the
sample touches that line (a statistical cache model, in the manner of StatCache).

A trace of 1 call in k leaves out the k - 1 calls between two traced ones. Played
through the cache model as they are, the traced calls find every line that is
particular to one call (a hash table's chain, the object looked up) missing,
although in the run the calls left out had brought many of them in: on a table
that fits the LLC the model counted several LLC misses per lookup where the run
has next to none. So a line's first touch in a traced call is not looked up in
the model; its chance of a hit at a level is that of the line's last touch being
recent enough for the level to hold it still:

- a line in m of the S traced calls is touched by a call with probability
  f = m / S; its last touch was w calls ago with probability (1 - f)^(w-1) f;
- the lines touched by w calls, W(w), are those of the frequent lines (each
  min(1, w f)) and of the rare ones (touched by one or two traced calls), whose
  count D the sample can only estimate: from how often the S calls' N rare
  touches meet the same line, D such that their distinct lines are
  D (1 - exp(-N / D)). That assumes the rare lines equally likely, and a few
  often met (a hash table's buckets) would make the many others (its entries)
  look few: so the rare lines are told apart by the instruction that first
  touched them, each instruction's lines a population of its own;
- a level of C lines holds what w* calls touched, W(w*) = C; the touch hits when
  the last one is within w* calls and came after the run's start (t calls before
  this one): 1 - exp(-f min(w*, t)).

Under uniform random access over D lines this is the LRU rule 1 - C / D that
knee.py fits. A level the prefetcher fills holds the touched lines' neighbours as
well, and so fewer calls' lines (each at the room model.py gives a prefetched
line there). Accesses after the first to a line in the same call are looked up
in the model, which sees every access of a traced call.

A level the prefetcher fills also has the line when a recent call touched the
line below (the next-line prefetcher brought it in then), or this call did: on a
table that fits, where only first touches miss, about half of a dense array's
lines come in that way, and leaving it out put the 1-in-64 sample of uthash
lookups over 5,000 entries 50% above the exact trace. The line below is a
frequent one, whose rate the sample gives, or a rare one: then, per instruction,
the share of its lines whose line below the calls touch at all (at the rare lines'
mean rate r) comes from how often, of two distinct traced calls, one touches a
line of it and the other the line below: that share is E[rate below] / r."""

from __future__ import annotations

import math
from collections import Counter

from .trace import Trace

RARE_CALLS = 2  # a line in at most this many traced calls is one of the rare ones


class SampledReuse:
    """Hit probabilities of first touches, from the traced calls of one trace."""

    def __init__(self, trace: Trace, shift: int) -> None:
        self.calls = max(len(trace.calls), 1)
        self.counts: Counter[int] = Counter()
        self.group: dict[int, int] = {}  # line -> the instruction that first touched it
        together: Counter[int] = Counter()  # line -> calls touching it and the line below
        for call in trace.calls:
            touched = call_lines(call, shift)
            for line, pc in touched.items():
                self.counts[line] += 1
                self.group.setdefault(line, pc)
                together[line] += line - 1 in touched
        rare: dict[int, list[int]] = {}
        for line, count in self.counts.items():
            if count <= RARE_CALLS:
                rare.setdefault(self.group[line], []).append(count)
        # per group: (touches per call, estimated distinct lines)
        self.rare = {
            pc: (sum(counts) / self.calls, distinct_lines(sum(counts), len(counts)))
            for pc, counts in rare.items()
        }
        self.frequent = [m / self.calls for m in self.counts.values() if m > RARE_CALLS]
        rare_lines = sum(lines for _, lines in self.rare.values())
        rare_touches = sum(touches for touches, _ in self.rare.values())
        self.rare_rate = rare_touches / rare_lines if rare_lines else 0.0
        self.below = below_shares(self.counts, together, self.group, self.calls, self.rare_rate)
        self.total_calls = max(trace.total_calls, self.calls)
        lines = set(self.counts)
        # the next-line prefetcher (model.py) also brings in each line's neighbour
        # to the levels below the first: per line touched, the neighbours not touched
        self.neighbours = len({line + 1 for line in lines} - lines) / max(len(lines), 1)

    def frequency(self, line: int) -> float:
        """The probability that a call touches `line`."""
        count = self.counts.get(line, 0)
        if count > RARE_CALLS:
            return count / self.calls
        touches, lines = self.rare.get(self.group.get(line, -1), (0.0, 0.0))
        return touches / lines if lines else 0.0

    def window_lines(self, calls: float) -> float:
        """W(w): the distinct lines `calls` consecutive calls touch."""
        frequent = sum(min(1.0, calls * f) for f in self.frequent)
        rare = sum(
            lines * -math.expm1(-calls * touches / lines)
            for touches, lines in self.rare.values()
            if lines
        )
        return frequent + rare

    def window(self, capacity: float) -> float:
        """w*: the calls whose lines a level of `capacity` lines holds (inf: all)."""
        if self.window_lines(math.inf) <= capacity:
            return math.inf
        low, high = 0.0, 1.0
        while self.window_lines(high) < capacity:
            low, high = high, high * 2
        for _ in range(60):
            middle = (low + high) / 2
            low, high = (middle, high) if self.window_lines(middle) < capacity else (low, middle)
        return low

    def hit(self, line: int, window: float, position: float, room: float = 0.0) -> float:
        """The probability that the first touch of `line` in the call at `position`
        (0..1 through the run) hits a level holding `window` calls' lines; `room`:
        in a level the prefetcher fills, which a touch of the line below brings it
        into as well, the room a prefetched line takes there, as a share of a
        line's (it is kept that share of the window)."""
        before = position * self.total_calls
        kept = -math.expm1(-self.frequency(line) * min(window, before))
        if not room:
            return kept
        return 1 - (1 - kept) * (1 - self.below_hit(line, min(window * room, before)))

    def below_hit(self, line: int, calls: float) -> float:
        """The probability that the line below was touched in the last `calls`
        calls (the prefetcher then brought this one in)."""
        count = self.counts.get(line - 1, 0)
        if count > RARE_CALLS:
            return -math.expm1(-count / self.calls * calls)
        share = self.below.get(self.group.get(line, -1), 0.0)
        return share * -math.expm1(-self.rare_rate * calls)


def below_shares(
    counts: Counter[int], together: Counter[int], group: dict[int, int], calls: int, rate: float
) -> dict[int, float]:
    """Per instruction, the share of its rare lines whose line below is one the
    calls touch (at `rate` per call, that of a rare line): from how often, of two
    distinct traced calls, the first touches one of its lines and the second the
    line below, touches weighted."""
    pairs: Counter[int] = Counter()
    touches: Counter[int] = Counter()
    for line, count in counts.items():
        below = counts.get(line - 1, 0)
        if below <= RARE_CALLS:
            pairs[group[line]] += count * below - together[line]
            touches[group[line]] += count
    if calls < 2 or rate <= 0:
        return {}
    return {pc: min(1.0, pairs[pc] / ((calls - 1) * touches[pc]) / rate) for pc in touches}


def call_lines(call: list, shift: int) -> dict[int, int]:
    """The data lines one call touches, each with the instruction that touched it first."""
    lines: dict[int, int] = {}
    for kind, address, size, pc in call:
        if kind != "I":
            for line in range(address >> shift, ((address + size - 1) >> shift) + 1):
                lines.setdefault(line, pc)
    return lines


def distinct_lines(touches: int, distinct: int) -> float:
    """D such that `touches` uniform random touches of D lines meet `distinct` of
    them: D (1 - exp(-touches / D)) = distinct. With no line met twice the sample
    bounds D only from below: touches^2 / 2, where one repeat is expected."""
    if distinct == 0:
        return 0.0
    if distinct >= touches:
        return max(float(distinct), touches * touches / 2)
    low, high = float(distinct), float(touches) * touches
    for _ in range(100):
        middle = math.sqrt(low * high)
        met = -middle * math.expm1(-touches / middle)
        low, high = (middle, high) if met < distinct else (low, middle)
    return low
