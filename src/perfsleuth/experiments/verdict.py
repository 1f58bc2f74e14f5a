"""The verdict of a paired comparison in one sentence, as reports and findings state it.

The sentence puts the rule next to the numbers: the gain as a percentage with its 95%
interval, then what made it a claim or kept it from being one (docs/experiments.md).
A "same" whose interval excludes no gain would read as a contradiction without it.
"""

from __future__ import annotations

from typing import Any

from .stats import MIN_PAIRS_FOR_CLAIM, PRACTICAL_THRESHOLD, SIGNIFICANCE


def ratio_sentence(subject: str, reference: str, result: dict[str, Any], metric: str) -> str:
    """'B is 1.42x faster than A: gain 29.6% (95% CI 25.9-33.3%) ... (ratio ...)' or why not."""
    lo, hi = result["ci95"]
    interval = (
        f"ratio {result['ratio']:.3f}, 95% CI {lo:.3f}-{hi:.3f}, "
        f"p={result['p_value']:.3g}, {result['runs']} pairs"
    )
    what = "fewer instructions" if metric == "instructions" else "faster"
    threshold = _threshold(metric)
    if result["verdict"] == "faster":
        return (
            f"{subject} is {result['ratio']:.2f}x {what} than {reference}: {gain_text(result)}, "
            f"p below {SIGNIFICANCE:g} and at least the {threshold} that counts ({interval})"
        )
    if result["verdict"] == "slower":
        slower = "more instructions" if metric == "instructions" else "slower"
        return (
            f"{subject} is {1 / result['ratio']:.2f}x {slower} than {reference}: "
            f"{gain_text(result)}, p below {SIGNIFICANCE:g} and at least the {threshold} "
            f"that counts ({interval})"
        )
    if result["runs"] < MIN_PAIRS_FOR_CLAIM:
        return (
            f"{subject}: too few runs to tell a difference from {reference} ({interval}); "
            f"use --runs {MIN_PAIRS_FOR_CLAIM} or more"
        )
    return (
        f"{subject}: no difference from {reference} claimed: {gain_text(result)}, but "
        f"{_why_same(result, metric)} ({interval})"
    )


def gain_text(result: dict[str, Any]) -> str:
    """'gain 5.5% (95% CI 1.7-7.8%)': the time saved, 1 - 1/ratio, negative for a loss."""
    lo, hi = result["ci95"]
    return f"gain {_gain(result['ratio']):.1f}% (95% CI {_gain(lo):.1f}% to {_gain(hi):.1f}%)"


def _gain(ratio: float) -> float:
    return 100.0 * (1.0 - 1.0 / ratio) if ratio > 0 else float("-inf")


def _threshold(metric: str) -> str:
    return f"{PRACTICAL_THRESHOLD.get(metric, PRACTICAL_THRESHOLD['time']) * 100:g}%"


def _why_same(result: dict[str, Any], metric: str) -> str:
    """Which of the three conditions of a claim (docs/experiments.md) the result missed."""
    lo, hi = result["ci95"]
    excludes_one = not lo <= 1.0 <= hi
    if result["p_value"] >= SIGNIFICANCE:
        why = f"p={result['p_value']:.3g} is not below the {SIGNIFICANCE:g} a claim needs"
        if excludes_one:
            why += (
                f": the 95% CI excludes no change, but a bootstrap interval from "
                f"{result['runs']} pairs is too narrow to trust alone, and the signed-rank "
                "test says too few pairs agreed in direction; more --runs"
                + (" (or --metric cpu on a busy machine)" if metric == "time" else "")
                + " can settle it"
            )
        return why
    if not excludes_one:
        return "its 95% CI includes 1 (no change)"
    change = abs(result["ratio"] - 1.0) * 100
    return f"a {change:.1f}% change is below the {_threshold(metric)} worth claiming"


def verdict_lines(doc: dict[str, Any]) -> list[str]:
    """The sentences `perfsleuth compare` / `try` print for a stored experiment, if it has
    verdicts (a `compare` document, or `try`'s variants)."""
    metric = doc.get("metric", "wall_s")
    if "verdict" in doc and "ci95" in doc and "p_value" in doc:
        return [ratio_sentence("B", "A", doc, metric)]
    lines = []
    for v in doc.get("variants", []):
        if v.get("ratio") is None:
            lines.append(f"{v['name']}: not measured: {v.get('error', 'no runs')}")
        else:
            lines.append(ratio_sentence(v["name"], "baseline", v, metric))
    return lines
