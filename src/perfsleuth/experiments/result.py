"""Turns measured series into result documents, and keeps them in the store.

A result shows per-side summaries (min/median/max of the runs that exited 0) and
paired comparisons; runs that exited non-zero are listed apart, never averaged in.
The stored experiment also keeps every raw run, so it can be re-read and re-plotted.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from ..errors import UserError
from ..store.runs import Store
from . import stats
from .runner import Measurement, Series

EXPERIMENT_KIND = "experiment"
SUMMARY_FIELDS = ("wall_s", "user_s", "sys_s", "max_rss_kb", "instructions")


def side_summary(series: Series) -> dict[str, Any]:
    ok = [m for m in series.runs if m.ok]
    doc: dict[str, Any] = {
        "command": shlex.join(series.side.argv),
        "runs": len(ok),
        "failed": len(series.runs) - len(ok),
    }
    if series.side.env:
        doc["env"] = dict(series.side.env)
    if not ok:
        return doc
    for name in SUMMARY_FIELDS:
        values = [getattr(m, name) for m in ok]
        if None not in values:
            doc[name] = stats.summarize(values)
    return doc


def failures(all_series: list[Series]) -> list[dict[str, Any]]:
    """Every run that exited non-zero, warm-up included: which side, which run, why."""
    found = []
    for s in all_series:
        for phase, measurements in (("warmup", s.warmup), ("run", s.runs)):
            for i, m in enumerate(measurements):
                if not m.ok:
                    found.append(_failure(s.side.name, phase, i + 1, m))
    return found


def _failure(side: str, phase: str, number: int, m: Measurement) -> dict[str, Any]:
    return {
        "side": side,
        "phase": phase,
        "run": number,
        "exit_status": m.exit_status,
        "stderr_tail": m.stderr_tail,
    }


def paired(base: Series, other: Series, metric: str) -> stats.Comparison:
    """Compare `other` against `base` on the rounds where both exited 0."""
    pairs = [(a, b) for a, b in zip(base.runs, other.runs, strict=True) if a.ok and b.ok]
    if len(pairs) < stats.MIN_PAIRS:
        raise UserError(_too_few_pairs(base, other, len(pairs)))
    return stats.compare(
        [a.value(metric) for a, _ in pairs], [b.value(metric) for _, b in pairs], metric
    )


def _too_few_pairs(base: Series, other: Series, good: int) -> str:
    worst = max((base, other), key=lambda s: sum(not m.ok for m in s.runs))
    return (
        f"only {good} of {len(base.runs)} rounds ran cleanly on both sides "
        f"({base.side.name}, {other.side.name}); at least {stats.MIN_PAIRS} are needed"
        f"{failure_summary(worst)}"
    )


def failure_summary(series: Series) -> str:
    """'; `cmd` exited with status 1 (last stderr line) in 3 of 10 runs', or ''."""
    bad = [m for m in series.runs if not m.ok]
    if not bad:
        return ""
    last = bad[-1]
    said = f" ({last.stderr_tail[-1].strip()})" if last.stderr_tail else ""
    return (
        f"; `{shlex.join(series.side.argv)}` exited with status {last.exit_status}{said} "
        f"in {len(bad)} of {len(series.runs)} runs"
    )


def comparison_json(c: stats.Comparison) -> dict[str, Any]:
    return {
        "verdict": c.verdict,
        "ratio": c.ratio,
        "ci95": list(c.ci95),
        "runs": c.pairs,
        "p_value": c.p_value,
    }


def raw_runs(all_series: list[Series]) -> dict[str, Any]:
    return {
        s.side.name: {
            "command": s.side.argv,
            "env": s.side.env,
            "runs": [m.to_json() for m in s.runs],
            "warmup": [m.to_json() for m in s.warmup],
        }
        for s in all_series
    }


def store_experiment(store: Store, run_id: int, what: str, doc: dict[str, Any]) -> str:
    """Keep the experiment (with its raw runs) as a document; returns its name."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = f"{what}-{stamp}-{time.time_ns() % 1_000_000:06d}"
    store.put_document(run_id, EXPERIMENT_KIND, name, doc)
    return name


def variant_json(base: Series, variant: Series, metric: str) -> dict[str, Any]:
    """One variant against the baseline: ratio = baseline / variant (above 1: faster)."""
    doc: dict[str, Any] = {"name": variant.side.name}
    try:
        doc.update(comparison_json(paired(base, variant, metric)))
    except UserError as e:
        doc.update({"ratio": None, "ci95": None, "verdict": "failed", "error": str(e)})
    doc["summary"] = side_summary(variant)
    return doc


def steps_json(all_series: list[Series], metric: str) -> list[dict[str, Any]]:
    """Each side against the one before it: the steps of a cumulative experiment."""
    steps = []
    for before, after in zip(all_series, all_series[1:], strict=False):
        doc = variant_json(before, after, metric)
        del doc["summary"]
        steps.append({**doc, "over": before.side.name})
    return steps


def try_json(all_series: list[Series], metric: str) -> dict[str, Any]:
    """The `try` document: the first series is the baseline, the others its variants."""
    base, *variants = all_series
    if not any(m.ok for m in base.runs):
        raise UserError(f"the baseline never ran cleanly{failure_summary(base)}")
    return {
        "metric": metric,
        "baseline": side_summary(base),
        "variants": [variant_json(base, v, metric) for v in variants],
        "failed": failures(all_series),
    }
