"""Statistics of an A/B experiment: per-side summaries, paired ratios, bootstrap CI, verdict.

Everything works on the pairs of interleaved rounds, as log(A_i / B_i): ratios
multiply, so their logs are what adds up, and a 2x speed-up and a 2x slow-down
cancel out. The ratio reported is the Hodges-Lehmann estimate (the median of all
pairwise means of the log ratios, exponentiated): on a busy machine a single run
that was descheduled for 10 ms must not move the answer, as it moves a mean. Its
95% confidence interval is a percentile bootstrap over the pairs.

A verdict other than "same" needs three things at once:
- the 95% interval excludes 1;
- the exact Wilcoxon signed-rank test rejects "no difference" at the 0.5% level. Under
  that hypothesis (for instance two identical commands) A and B are exchangeable
  within a pair, so the test's error rate is exact whatever the shape of the noise,
  where a bootstrap interval of 10 pairs is known to be too narrow. It also means a
  claim needs at least 9 pairs;
- the estimate is at least a small practical threshold away from 1: with many
  runs, a 0.3% drift is "significant" yet not worth anyone's decision.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_WORK = 3_000_000  # caps resamples x pairwise means for large experiments
MIN_RESAMPLES = 200
MAX_WALSH = 5_000  # pairwise means per estimate; beyond, a random sample of them
CONFIDENCE = 0.95
SIGNIFICANCE = 0.005
# Smallest relative difference worth claiming, per metric. Exact instruction counts
# are nearly noise-free, so a smaller change can still be real there.
PRACTICAL_THRESHOLD = {"time": 0.02, "cpu": 0.02, "instructions": 0.005}
MIN_PAIRS = 3
# Fewest pairs with which the exact two-sided signed-rank test can reach SIGNIFICANCE
# at all (its smallest p-value is 2 / 2^n): with fewer, every verdict is "same".
MIN_PAIRS_FOR_CLAIM = next(n for n in range(1, 64) if 2.0 / 2.0**n < SIGNIFICANCE)
EXACT_WILCOXON_MAX_PAIRS = 60  # beyond, the normal approximation is accurate and faster


@dataclass(frozen=True)
class Comparison:
    ratio: float
    ci95: tuple[float, float]
    p_value: float
    pairs: int
    verdict: str  # "faster" (B beats A), "slower", or "same"


def summarize(values: Sequence[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def log_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """log(A_i / B_i) for each pair; pairs where either side is zero are dropped."""
    return [math.log(x / y) for x, y in zip(a, b, strict=True) if x > 0 and y > 0]


def hodges_lehmann(values: Sequence[float]) -> float:
    """Median of the means of all pairs (i <= j): a robust centre of symmetric data.

    Beyond MAX_WALSH pairs, a fixed-seed random sample of them stands in for all.
    """
    n = len(values)
    if n * (n + 1) // 2 <= MAX_WALSH:
        pairs: Iterable[tuple[int, int]] = ((i, j) for i in range(n) for j in range(i, n))
    else:
        rng = random.Random(n)
        pairs = ((rng.randrange(n), rng.randrange(n)) for _ in range(MAX_WALSH))
    return statistics.median((values[i] + values[j]) / 2.0 for i, j in pairs)


def bootstrap_ci(logs: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the Hodges-Lehmann estimate, as ratios."""
    rng = random.Random(seed)
    n = len(logs)
    walsh = min(MAX_WALSH, n * (n + 1) // 2)
    resamples = max(MIN_RESAMPLES, min(BOOTSTRAP_RESAMPLES, BOOTSTRAP_WORK // walsh))
    estimates = sorted(hodges_lehmann(rng.choices(logs, k=n)) for _ in range(resamples))
    tail = (1.0 - CONFIDENCE) / 2.0
    lo = estimates[int(tail * (resamples - 1))]
    hi = estimates[math.ceil((1.0 - tail) * (resamples - 1))]
    return math.exp(lo), math.exp(hi)


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def _signed_rank_counts(n: int) -> list[int]:
    """How many of the 2^n sign patterns give each rank sum W+ = 0..n(n+1)/2."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for rank in range(1, n + 1):
        for w in range(len(counts) - 1, rank - 1, -1):
            counts[w] += counts[w - rank]
    return counts


def wilcoxon_p(logs: Sequence[float]) -> float:
    """Two-sided p-value of the exact Wilcoxon signed-rank test of 'centred on 0'."""
    nonzero = [d for d in logs if d != 0.0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    ranks = _ranks([abs(d) for d in nonzero])
    w_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    extreme = min(w_plus, n * (n + 1) / 2.0 - w_plus)
    if n > EXACT_WILCOXON_MAX_PAIRS:
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        return math.erfc(abs(extreme - n * (n + 1) / 4.0) / sd / math.sqrt(2.0))
    counts = _signed_rank_counts(n)
    tail = sum(c for w, c in enumerate(counts) if w <= extreme + 1e-9)
    return min(1.0, 2.0 * tail / 2.0**n)


def verdict(ratio: float, ci95: tuple[float, float], p_value: float, threshold: float) -> str:
    if p_value >= SIGNIFICANCE:
        return "same"
    lo, hi = ci95
    if lo > 1.0 and ratio >= 1.0 + threshold:
        return "faster"
    if hi < 1.0 and ratio <= 1.0 / (1.0 + threshold):
        return "slower"
    return "same"


def compare(a: Sequence[float], b: Sequence[float], metric: str = "time") -> Comparison:
    """Paired comparison of A and B (same length, pair i measured in round i)."""
    logs = log_ratios(a, b)
    if len(logs) < MIN_PAIRS:
        raise ValueError(f"need at least {MIN_PAIRS} successful pairs, got {len(logs)}")
    ratio = math.exp(hodges_lehmann(logs))
    ci95 = bootstrap_ci(logs)
    p_value = wilcoxon_p(logs)
    found = verdict(ratio, ci95, p_value, PRACTICAL_THRESHOLD[metric])
    return Comparison(ratio, ci95, p_value, len(logs), found)
