"""Text of `perfsleuth gate`: the verdict, then the functions whose counts changed."""

from __future__ import annotations

from rich.console import Console

from .diff_text import inlining_sentence


def render(doc: dict, console: Console) -> None:
    verdict = "PASS" if doc["passed"] else "FAIL"
    console.print(
        f"{verdict}: {doc['total_baseline']:,} → {doc['total']:,} {doc['event']} "
        f"({100 * doc['change']:+.3f}%, allowed +{100 * doc['max_increase']:.3f}%) "
        f"baseline run {doc['baseline']}, this run {doc['run']}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if doc["exit_status"]:
        console.print(
            f"FAIL: the workload exited with status {doc['exit_status']}",
            markup=False,
            soft_wrap=True,
        )
    for row in doc["changes"]:
        # a function below the baseline file's list: its count was at most the list's least
        before, delta = (
            (f"{row['a']:,}", f"{row['delta']:+,}")
            if row["a"] is not None
            else (f"≤ {row['a_at_most']:,}", f"≥ {row['delta']:+,}")
        )
        console.print(
            f"{before:>15} → {row['b']:>15,} {delta:>15}  {row['function']}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for row in doc.get("inlining") or ():
        console.print(
            inlining_sentence(row, doc["baseline"], doc["run"], doc["event"]),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
