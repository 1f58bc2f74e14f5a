"""The verdict of a paired comparison in one sentence, as reports and findings state it."""

from __future__ import annotations

from typing import Any

from .stats import MIN_PAIRS_FOR_CLAIM, PRACTICAL_THRESHOLD, SIGNIFICANCE


def ratio_sentence(subject: str, reference: str, result: dict[str, Any], metric: str) -> str:
    """'B is 1.42x faster than A (95% CI 1.35-1.50, 10 pairs)' or the 'no difference' line."""
    lo, hi = result["ci95"]
    interval = (
        f"ratio {result['ratio']:.3f}, 95% CI {lo:.3f}-{hi:.3f}, "
        f"p={result['p_value']:.3g}, {result['runs']} pairs"
    )
    what = "fewer instructions" if metric == "instructions" else "faster"
    if result["verdict"] == "faster":
        return f"{subject} is {result['ratio']:.2f}x {what} than {reference} ({interval})"
    if result["verdict"] == "slower":
        slower = "more instructions" if metric == "instructions" else "slower"
        return f"{subject} is {1 / result['ratio']:.2f}x {slower} than {reference} ({interval})"
    if result["runs"] < MIN_PAIRS_FOR_CLAIM:
        return (
            f"{subject}: too few runs to tell a difference from {reference} ({interval}); "
            f"use --runs {MIN_PAIRS_FOR_CLAIM} or more"
        )
    return (
        f"{subject}: no difference from {reference} claimed: {_why_same(result, metric)} "
        f"({interval})"
    )


def _why_same(result: dict[str, Any], metric: str) -> str:
    """Which of the three conditions of a claim (docs/experiments.md) the result missed."""
    if result["p_value"] >= SIGNIFICANCE:
        return f"p={result['p_value']:.3g} is not below the {SIGNIFICANCE:g} a claim needs"
    lo, hi = result["ci95"]
    if lo <= 1.0 <= hi:
        return "its 95% CI includes 1"
    threshold = PRACTICAL_THRESHOLD.get(metric, PRACTICAL_THRESHOLD["time"])
    change = abs(result["ratio"] - 1.0) * 100
    return f"a {change:.1f}% change is below the {threshold * 100:g}% worth claiming"


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
