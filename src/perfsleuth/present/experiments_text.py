"""Experiments as text: side summaries, ratios with their interval, verdicts."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..experiments.verdict import ratio_sentence

FIELDS = (
    ("wall_s", "wall"),
    ("user_s", "user"),
    ("sys_s", "sys"),
    ("max_rss_kb", "peak RSS"),
    ("instructions", "instructions"),
)


def _seconds(v: float) -> str:
    return f"{v * 1000:.1f} ms" if v < 1.0 else f"{v:.3f} s"


def _kib(v: float) -> str:
    return f"{v / 1024:.1f} MiB"


def _count(v: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.3f} {unit}"
    return f"{v:.0f}"


FORMATTERS = {"max_rss_kb": _kib, "instructions": _count}


def summary_table(sides: list[tuple[str, dict[str, Any]]]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("side", "measure", "min", "median", "max", "runs"):
        table.add_column(col, justify="left" if col in ("side", "measure") else "right")
    for label, summary in sides:
        first = True
        for key, title in FIELDS:
            if key not in summary:
                continue
            fmt = FORMATTERS.get(key, _seconds)
            s = summary[key]
            runs = f"{summary['runs']}" + (
                f" ({summary['failed']} failed)" if summary["failed"] else ""
            )
            table.add_row(
                label if first else "",
                title,
                fmt(s["min"]),
                fmt(s["median"]),
                fmt(s["max"]),
                runs if first else "",
            )
            first = False
    return table


def failure_lines(failed: list[dict[str, Any]]) -> list[str]:
    lines = []
    for f in failed:
        where = f"{f['phase']} {f['run']}"
        lines.append(f"{f['side']} {where}: exit status {f['exit_status']} (not counted)")
        lines.extend(f"    {line}" for line in f.get("stderr_tail", [])[-3:])
    return lines


def render_compare(doc: dict[str, Any], console: Console) -> None:
    # markup=False: a command's brackets (an XPath predicate, a glob) are not rich markup
    console.print(f"A: {doc['a']['command']}", markup=False)
    console.print(f"B: {doc['b']['command']}", markup=False)
    console.print(summary_table([("A", doc["a"]), ("B", doc["b"])]))
    for line in failure_lines(doc["failed"]):
        console.print(line, style="yellow")
    console.print(ratio_sentence("B", "A", doc, doc["metric"]), style="bold")
    for note in doc.get("notes", []):
        console.print(note)


def render_try(doc: dict[str, Any], console: Console) -> None:
    sides = [("baseline", doc["baseline"])]
    sides += [(v["name"], v["summary"]) for v in doc["variants"] if "summary" in v]
    console.print(f"baseline: {doc['baseline']['command']}", markup=False)
    console.print(summary_table(sides))
    for line in failure_lines(doc["failed"]):
        console.print(line, style="yellow")
    for v in doc["variants"]:
        if v.get("ratio") is None:
            console.print(f"{v['name']}: not measured: {v['error']}", style="yellow")
        else:
            console.print(ratio_sentence(v["name"], "baseline", v, doc["metric"]), style="bold")
    for step in doc.get("steps", [])[1:]:  # the first step is the first variant, above
        if step.get("ratio") is not None:
            console.print(
                "step: " + ratio_sentence(step["name"], step["over"], step, doc["metric"])
            )
    for note in doc.get("notes", []):
        console.print(note)
