"""Every source file above a threshold, annotated with exact counts per line.

Made to be diffed: files come in path order, counts sit in a fixed-width left
margin with thousands separators ("." for lines that executed nothing), tabs are
expanded, and nothing in the output depends on the time or the run's order. Two
runs of a changed program compared with `diff` show exactly the lines whose counts
moved.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rich.console import Console

from ..formats.callgrind import CallgrindData
from .annotate import find_source

MIN_WIDTH = 13  # fits 9,999,999,999
NO_SOURCE = "???"


def annotate_all(
    data: CallgrindData,
    roots: list[Path],
    *,
    threshold: float,
    context: int | None,
    functions: set[str] | None = None,
    recorded: dict[str, list[str]] | None = None,
) -> dict:
    """The `annotate --all` document; `threshold` is a fraction of the first event.
    With `functions`, only those functions' lines (`annotate FUNC` on a count run).
    Source files recorded with the run are shown as they were then; others are
    read from disk."""
    per_file = file_lines(data, functions)
    total = data.totals[0] if data.totals else 0
    files = []
    hidden = 0
    for file in sorted(per_file):
        lines = per_file[file]
        counts = _sum(lines.values(), len(data.events))
        if total and counts[0] < threshold * total:
            hidden += 1
            continue
        if file == NO_SOURCE:
            files.append(_no_source_entry(data, functions, counts, total))
        else:
            text = (recorded or {}).get(file)
            files.append(_file_entry(file, lines, counts, total, roots, context, text))
    return {
        "events": list(data.events),
        "totals": dict(zip(data.events, data.totals, strict=False)),
        "threshold": threshold,
        "files": files,
        "files_below_threshold": hidden,
    }


def file_lines(
    data: CallgrindData, functions: set[str] | None = None
) -> dict[str, dict[int, list[int]]]:
    """file -> line -> exact counts of every event (all functions' code on that line)."""
    out: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for (_ob, fn), sites in data.self_costs.items():
        if functions is not None and fn not in functions:
            continue
        for (file, line), costs in sites.items():
            row = out[file or NO_SOURCE].setdefault(line, [0] * len(costs))
            for i, c in enumerate(costs):
                row[i] += c
    return out


def _no_source_entry(
    data: CallgrindData, functions: set[str] | None, counts: list[int], total: int
) -> dict:
    """Code without line information (no debug info): one row per function, by name."""
    per_function: dict[str, list[int]] = {}
    for (ob, fn), sites in data.self_costs.items():
        if functions is not None and fn not in functions:
            continue
        unknown = [costs for (file, _line), costs in sites.items() if file in ("", NO_SOURCE)]
        if unknown:
            per_function[f"{fn} [{Path(ob).name}]"] = _sum(unknown, len(counts))
    rows = [
        {"line": 0, "function": name, "counts": per_function[name], "source": None}
        for name in sorted(per_function)
    ]
    return {
        "file": NO_SOURCE,
        "path": None,
        "counts": counts,
        "share": counts[0] / total if total else 0.0,
        "lines": rows,
    }


def _sum(rows, n: int) -> list[int]:
    total = [0] * n
    for row in rows:
        for i, c in enumerate(row):
            total[i] += c
    return total


def _file_entry(
    file: str,
    lines: dict[int, list[int]],
    counts: list[int],
    total: int,
    roots: list[Path],
    context: int | None,
    recorded: list[str] | None,
) -> dict:
    source = find_source(file, roots) if recorded is None else Path(file)
    if recorded is not None:
        text = recorded
    else:
        text = source.read_text(errors="replace").splitlines() if source else []
    shown = shown_lines(sorted(lines), len(text), context)
    rows = [_row(number, lines, text, len(counts)) for number in shown]
    return {
        "file": file,
        "path": str(source) if source else None,
        "counts": counts,
        "share": counts[0] / total if total else 0.0,
        "lines": rows,
    }


def _row(number: int | None, lines: dict[int, list[int]], text: list[str], n: int) -> dict:
    """One printed line; a row without a line number marks skipped lines."""
    if number is None:
        return {"line": None, "counts": [], "source": None}
    return {
        "line": number,
        "counts": lines.get(number, [0] * n),
        "source": text[number - 1].expandtabs(8) if 0 < number <= len(text) else None,
    }


def shown_lines(counted: list[int], length: int, context: int | None) -> list[int | None]:
    """Line numbers to print; None marks a gap. Counted lines past the end come last."""
    if not length:
        return list(counted)
    if context is None:
        wanted = set(range(1, length + 1))
    else:
        wanted = set()
        for n in counted:
            wanted.update(range(max(1, n - context), min(length, n + context) + 1))
    wanted.update(n for n in counted)
    out: list[int | None] = []
    previous = 0
    for n in sorted(wanted):
        if n - previous > 1 and context is not None and 0 < n <= length:
            out.append(None)
        out.append(n)
        previous = n
    return out


def render(doc: dict, console: Console) -> None:
    width = max([MIN_WIDTH, *(len(f"{t:,}") for t in doc["totals"].values())])
    events = doc["events"]
    margin = " ".join(f"{e:>{width}}" for e in events)
    totals = ", ".join(f"{t:,} {e}" for e, t in doc["totals"].items())
    if "functions" in doc:
        scope = f"lines of {', '.join(doc['functions'])}"
    else:
        scope = (
            f"files with at least {100 * doc['threshold']:.2f}% of {events[0]} "
            f"({doc['files_below_threshold']} below)"
        )
    _say(console, f"run {doc['run']}: {totals} in total; {scope}")
    for entry in doc["files"]:
        _render_file(entry, events, width, margin, console)


def _render_file(entry: dict, events: list[str], width: int, margin: str, out: Console) -> None:
    counts = ", ".join(f"{c:,} {e}" for e, c in zip(events, entry["counts"], strict=True))
    where = entry["path"] or f"{entry['file']} (source not found; pass --src DIR)"
    if entry["file"] == NO_SOURCE:
        where = "code without line information (no debug info), per function"
    _say(out, f"\n-- {where}: {counts} ({100 * entry['share']:.2f}%)")
    _say(out, f"{margin}  source")
    for row in entry["lines"]:
        _say(out, _line_text(row, width))


def _say(out: Console, text: str) -> None:
    """One line as is: no markup, no highlighting, never wrapped."""
    out.print(text, highlight=False, markup=False, soft_wrap=True)


def _line_text(row: dict, width: int) -> str:
    if row["line"] is None:
        return "-- ..."
    cells = " ".join(f"{c:>{width},}" if c else f"{'.':>{width}}" for c in row["counts"])
    if "function" in row:
        return f"{cells}  {row['function']}"
    if row["source"] is None:
        return f"{cells}  <line {row['line']}>"
    return f"{cells}  {row['source']}".rstrip()
