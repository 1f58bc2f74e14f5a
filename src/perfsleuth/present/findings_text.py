"""Findings as text: a ranked table, then each finding's evidence and fix, in 100 columns."""

from __future__ import annotations

import os
import textwrap
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import rank
from ..symbols.names import elide_templates
from .output import pct

WIDTH = 100


def render(doc: dict[str, Any], console: Console) -> None:
    width = min(console.width, WIDTH)
    findings = doc["findings"]
    if not findings:
        console.print(Text(f"run {doc['run']}: no findings to show"))
    else:
        console.print(_table(doc, width))
        for number, finding in enumerate(findings, start=1):
            console.print(Text("\n".join(_details(number, finding, width))))
    _footer(doc, console, width)


def render_run(doc: dict[str, Any], console: Console) -> None:
    """`perfsleuth run`: the findings, then a short TopN of the run (doc["top"])."""
    render(doc, console)
    console.print()
    _render_top(doc["top"], console)


def _table(doc: dict[str, Any], width: int) -> Table:
    table = Table(
        title=f"run {doc['run']}: {len(doc['findings'])} finding(s), ranked by gain (* measured)",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
        width=width,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("gain", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    table.add_column("conf", justify="right", no_wrap=True)
    table.add_column("finding", overflow="fold", ratio=1)
    for number, f in enumerate(doc["findings"], start=1):
        table.add_row(
            str(number),
            _gain(f),
            f"{100 * f['share']:.1f}%",
            f"{f['confidence']:.2f}",
            Text(f"{f['title']} [{f['kind']}]"),
        )
    return table


def _gain(f: dict[str, Any]) -> str:
    """rank.py's gain; `*` when an A/B experiment measured it."""
    return f"{100 * f['gain']:.1f}%" + ("*" if f["gain_measured"] else "")


def _gain_words(f: dict[str, Any]) -> str:
    if f["gain_measured"]:
        return f"measured gain {100 * f['gain']:.1f}% (estimated {100 * f['estimated_gain']:.1f}%)"
    return f"estimated gain {100 * f['gain']:.1f}%"


def _details(number: int, f: dict[str, Any], width: int) -> list[str]:
    indent = "    "
    lines = [""] + textwrap.wrap(f"{number}. {f['title']}", width, subsequent_indent=indent)
    where = location(f)
    if where:
        lines += _wrap(f"where: {where}", width, indent)
    lines += _wrap(
        f"rule {f['rule']}, share {100 * f['share']:.1f}%, {_gain_words(f)}, "
        f"confidence {f['confidence']:.2f}",
        width,
        indent,
    )
    estimate = estimate_range(f)
    if estimate:
        lines += _wrap(estimate, width, indent, hanging="  ")
    for item in f.get("evidence", []):
        lines += _wrap(f"- {item}", width, indent, hanging="  ")
    lines += _wrap(f"fix: {f['suggestion']}", width, indent, hanging="     ")
    fix = f.get("fix") or {}
    if fix.get("command"):
        lines += _wrap(f"try: {fix['command']}", width, indent, hanging="     ")
    if fix.get("install"):
        lines += _wrap(f"install: {fix['install']}", width, indent, hanging="     ")
    verified = f.get("verified")
    if verified and verified.get("summary"):
        lines += _wrap(f"verified: {verified['summary']}", width, indent)
    elif verified:
        ci = verified.get("ci95") or []
        ci_text = f", 95% CI {ci[0]:.2f}-{ci[1]:.2f}" if len(ci) == 2 else ""
        lines += _wrap(
            f"verified: {verified.get('ratio', 0):.2f}x faster over "
            f"{verified.get('runs', '?')} runs{ci_text}",
            width,
            indent,
        )
    return lines


def estimate_range(f: dict[str, Any]) -> str:
    """`estimate 8.0-15.0% of the run, from: BASIS`; '' for a finding without a range."""
    low, high = f.get("gain_low") or 0.0, f.get("gain_high") or 0.0
    if high <= 0:
        return ""
    text = f"estimate {100 * low:.1f}-{100 * high:.1f}% of the run"
    return text + (f", from: {f['gain_basis']}" if f.get("gain_basis") else "")


def location(f: dict[str, Any]) -> str:
    """`function at file:line`, `function in dso`, or whichever part is known."""
    name = _short(f["function"]) if f.get("function") else ""
    if f.get("file"):
        place = f"{f['file']}:{f['line']}" if f.get("line") else f["file"]
    elif f.get("dso"):
        place = f"in {f['dso']}"
    else:
        return name
    if not name or name.endswith(f" {place}"):  # "[unknown] in gzip" names its DSO itself
        return name or place
    return f"{name} {place}" if place.startswith("in ") else f"{name} at {place}"


def _short(name: str, limit: int = 60) -> str:
    name = elide_templates(name)
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _wrap(text: str, width: int, indent: str, hanging: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent + hanging,
        break_long_words=True,
        break_on_hyphens=False,
    )


def _footer(doc: dict[str, Any], console: Console, width: int) -> None:
    lines = []
    if doc.get("hidden"):
        why = rank.hidden_summary(doc.get("hidden_findings", []))
        lines.append(f"{doc['hidden']} finding(s) hidden ({why}); --all shows them")
    for note in doc.get("notes", []):
        lines += textwrap.wrap(f"note: {note}", width, subsequent_indent="      ")
    if lines:
        console.print(Text("\n" + "\n".join(lines)))


def _render_top(doc: dict, console: Console) -> None:
    """A short TopN; `perfsleuth top` shows the full one."""
    table = Table(
        title=f"top functions ({doc['samples']:,} samples; `perfsleuth top` shows more)",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    for name in ("self", "total"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("function", no_wrap=True, max_width=56)
    table.add_column("where", no_wrap=True, max_width=30)
    for row in doc["rows"]:
        where = os.path.basename(row["file"]) or row["dso"]
        if row["file"] and row["line"]:
            where += f":{row['line']}"
        cells = (pct(row["self"]), pct(row["total"]), elide_templates(row["function"]), where)
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
