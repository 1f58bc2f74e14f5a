"""The fleet commands as text: `fleet top` (the top table over a time range, or the share
of each service or host), `fleet status`."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from . import top_text
from .output import cell, pct

TIME = "%Y-%m-%d %H:%M:%S UTC"


def utc(t: float | None) -> str:
    return time.strftime(TIME, time.gmtime(t)) if t is not None else "-"


def render_top(doc: dict, console: Console) -> None:
    where = f" where {doc['where']}" if doc["where"] else ""
    title = f"fleet {utc(doc['from'])} .. {utc(doc['to'])}{where}"
    if "label" in doc:
        _render_labels(doc, f"{title}, by {doc['label']}", console)
        return
    if doc["by"] == "library":  # the DSO table, each DSO named by its library
        doc = {**doc, "by": "dso"}
    top_text.render({**doc, "run": title}, console)
    if not doc["rows"]:
        console.print("no samples in this range: widen --from/--to or relax --where")


def value_column(doc: dict) -> tuple[str, float]:
    """The header and divisor of a column of a query's values: CPU seconds for CPU
    profiles, seconds, MB or a count for the other types (doc's `type` and `unit`)."""
    unit = doc.get("unit", "ns")
    if unit == "ns":
        return ("CPU s" if doc.get("type", "cpu") == "cpu" else "s"), 1e9
    return ("MB", 1e6) if unit == "bytes" else (unit, 1.0)


def _render_labels(doc: dict, title: str, console: Console) -> None:
    table = Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)
    header, scale = value_column(doc)
    label = doc["label"]
    for col in ("share", header, label):
        table.add_column(col, justify="right" if col != label else "left", overflow="fold")
    for row in doc["rows"]:
        table.add_row(
            pct(row["self"]), f"{row['self'] * doc['total'] / scale:,.1f}", cell(row[label])
        )
    console.print(table)
    if not doc["rows"]:
        console.print("no samples in this range: widen --from/--to or relax --where")


STATUS_COLUMNS = (
    "host",
    "last push",
    "windows",
    "samples",
    "samples/s",
    "dropped windows",
    "lost samples",
    "agent CPU",
    "agent RSS",
)


def _count(value: object) -> str:
    """A count an agent reported; "-" when its host has no agent (another client)."""
    return f"{value:,}" if isinstance(value, int) else "-"


def _agent_cost(metrics: dict) -> tuple[str, str]:
    """The agent's share of its host's CPU since it started (agents before that metric:
    over their last report) and its memory with perf's, or "-"."""
    share = metrics.get("cpu_share_since_start", metrics.get("cpu_share"))
    keys = ("agent_rss_bytes", "perf_rss_bytes")
    rss = [value for key in keys if isinstance(value := metrics.get(key), int)]
    cpu = f"{share:.2%}" if isinstance(share, int | float) else "-"
    return cpu, f"{sum(rss) >> 20:,} MB" if rss else "-"


def render_status(doc: dict, console: Console) -> None:
    console.print(
        f"fleet store {doc['store']}: {doc['bytes']:,} bytes in {doc['files']:,} files, "
        f"data from {utc(doc['oldest'])} to the hour of {utc(doc['newest'])}"
    )
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in STATUS_COLUMNS:
        table.add_column(col, overflow="fold", justify="left" if col == "host" else "right")
    for h in doc["hosts"]:
        table.add_row(
            cell(h["host"]),
            utc(h["last_push"]),
            f"{h['windows']:,}",
            f"{h['samples']:,}",
            f"{h['samples_per_s']:.1f}",
            _count(h.get("windows_dropped")),
            _count(h.get("lost_samples")),
            *_agent_cost(h["metrics"]),
        )
    console.print(table)
    if "cost" in doc:
        _render_cost(doc["cost"], console)
    if not doc["hosts"]:
        console.print("no host has pushed yet: start `perfsleuth collector` and an agent")


def _render_cost(cost: dict, console: Console) -> None:
    console.print(
        f"objects: {cost['objects']:,} now, {cost['objects_after_compaction']:,} after"
        f" `fleet compact`; a query of every hour reads up to {cost['query_objects']:,},"
        f" {cost['query_objects_after_compaction']:,} after it. Writes: about"
        f" {cost['requests_per_hour']:,} requests in the last hour"
        f" ({cost['windows_last_hour']:,} windows)"
    )
