"""perfsleuth threads: per thread, where its time went by state."""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

from ..model.profile import STATES, Profile
from ..present.output import emit, pct
from .common import add_filter_options, add_output_options, add_run_argument, load_profile

NAME = "threads"
HELP = "per thread (name, tid): time by state (running, mutex, condvar, io, sleep, other)"
UNKNOWN_STATE = "unknown"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    add_filter_options(parser)
    add_output_options(parser, ("text", "json"))


def by_thread(profile: Profile) -> list[dict[str, Any]]:
    """One row per thread, busiest first: total weight, share of the run, and the
    fraction of the thread's own time in each state."""
    weights: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for _stack, weight, _count, t, state in profile.rows():
        weights[t][state or UNKNOWN_STATE] += weight
    total = profile.total or 1.0
    rows = []
    for t, states in weights.items():
        thread_total = sum(states.values())
        thread = profile.threads[t] if t >= 0 else None
        rows.append(
            {
                "tid": thread.tid if thread else 0,
                "pid": thread.pid if thread else 0,
                "name": thread.name if thread else "",
                "total": thread_total,
                "share": thread_total / total,
                "states": {s: w / thread_total for s, w in _ordered(states).items()},
            }
        )
    return sorted(rows, key=lambda r: (-r["total"], r["tid"]))


def _ordered(states: dict[str, float]) -> dict[str, float]:
    order = [*STATES, UNKNOWN_STATE]
    return {s: states[s] for s in sorted(states, key=order.index) if states[s] > 0}


def render(doc: dict[str, Any], console: Console) -> None:
    states = [s for s in (*STATES, UNKNOWN_STATE) if any(s in r["states"] for r in doc["threads"])]
    table = Table(
        title=f"run {doc['run']} — {len(doc['threads'])} threads, time by state",
        title_justify="left",
        box=None,
    )
    table.add_column("tid", justify="right")
    table.add_column("name")
    table.add_column(_total_label(doc["unit"]), justify="right")
    for s in states:
        table.add_column(s, justify="right")
    for r in doc["threads"]:
        cells = [pct(r["states"][s]) if s in r["states"] else "" for s in states]
        table.add_row(str(r["tid"]), r["name"], _amount(r["total"], doc["unit"]), *cells)
    console.print(table)


def _total_label(unit: str) -> str:
    return "time" if unit == "ns" else unit


def _amount(weight: float, unit: str) -> str:
    return f"{weight / 1e9:.3f} s" if unit == "ns" else f"{weight:,.0f}"


def run(args: argparse.Namespace) -> int:
    _store, run_id, profile = load_profile(args)
    doc = {
        "run": str(run_id),
        "unit": profile.unit,
        "total": profile.total,
        "threads": by_thread(profile),
    }
    emit(doc, args.format, args.output, render)
    return 0
