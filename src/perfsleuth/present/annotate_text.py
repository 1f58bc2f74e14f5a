"""`perfsleuth annotate` as text: a function's lines with their shares of a sampled
run, or a count run's lines with their exact counts in a fixed-width left margin
(thousands separators, "." for lines that executed nothing), made to be diffed.

A count run's listing is plain lines written straight to the file: rich is imported
only for a sampled run's (its import cost a third of cg_annotate's run on a small
program)."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from ..model.counts import NO_SOURCE
from ..views.annotate import not_found_hint
from .output import console_for

if TYPE_CHECKING:
    from rich.console import Console

MIN_WIDTH = 13  # fits 9,999,999,999


def write(doc: dict, fh: IO[str]) -> None:
    if "events" in doc:
        _write_counts(doc, fh)
    else:
        _render_shares(doc, console_for(fh))


def _render_shares(doc: dict, console: Console) -> None:
    from rich.markup import escape

    for entry in doc["files"]:
        where = entry["path"] or _not_found(entry["file"] or "?")
        console.print(
            f"[bold]{escape(entry['function'])}[/bold] — {escape(where)}  "
            f"self {100 * entry['self']:.2f}% of run {doc['run']}",
            highlight=False,
        )
        console.print(f"{'self':>7} {'total':>7}  {'line':>5}  source", style="bold")
        for row in entry["lines"]:
            s = f"{100 * row['self']:6.2f}%" if row["self"] else ""
            t = f"{100 * row['total']:6.2f}%" if row["total"] else ""
            line = str(row["line"]) if row["line"] > 0 else "?"
            style = "red" if row["self"] >= 0.05 else None
            console.print(
                f"{s:>7} {t:>7}  {line:>5}  {escape(row['source'])}",
                style=style,
                highlight=False,
                soft_wrap=True,
            )
        console.print()
    for code in doc.get("asm", []):
        _render_asm(code, console)


def _render_asm(code: dict, console: Console) -> None:
    from rich.markup import escape

    binary = f"{code['binary']} (build-id {code['build_id'] or 'none'})" if code["binary"] else ""
    title = f"machine code of the hot lines of {code['function']} {binary}"
    console.print(escape(title), style="bold", highlight=False)
    if code["reason"]:
        console.print(f"  {escape(code['reason'])}", highlight=False, soft_wrap=True)
    elif code["read_from"] != code["binary"]:
        copy = f"  {code['binary']} is gone or rebuilt: read from perf's copy {code['read_from']}"
        console.print(escape(copy), highlight=False, soft_wrap=True)
    if code.get("no_cost_reason") and code["lines"]:
        why = f"  no cost per instruction: {code['no_cost_reason']}"
        console.print(escape(why), highlight=False, soft_wrap=True)
    counted = (
        "share of the function's self samples per instruction"
        if code["counts"] == "instruction"
        else "samples per line"
    )
    for row in code["lines"]:
        console.print(
            f"  {escape(row['file'])}:{row['line']}  self {100 * row['self']:.2f}%  "
            f"total {100 * row['total']:.2f}% ({counted})",
            style="bold",
            highlight=False,
        )
        if not row["instructions"]:
            console.print("    no code of its own in the binary", highlight=False)
        symbol = None
        for insn in row["instructions"]:
            if insn["symbol"] != symbol:
                symbol = insn["symbol"]
                console.print(escape(f"    in {symbol}:"), highlight=False)
            share = insn.get("share")
            cost = "" if share is None else f"{100 * share:.1f}%"
            line = f"    {cost:>6}  {insn['address']:#10x}  {escape(insn['text'])}"
            console.print(line, highlight=False)
    console.print()


def _write_counts(doc: dict, fh: IO[str]) -> None:
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
    fh.write(f"run {doc['run']}: {totals} in total; {scope}\n")
    for entry in doc["files"]:
        _write_file(entry, events, width, margin, fh)


def _write_file(entry: dict, events: list[str], width: int, margin: str, fh: IO[str]) -> None:
    counts = ", ".join(f"{c:,} {e}" for e, c in zip(events, entry["counts"], strict=True))
    where = entry["path"] or _not_found(entry["file"])
    if entry.get("src"):
        why = (
            "not read: not kept with the imported run (outside its file's folder, or newer "
            f"than the file); pass --src {entry['src']}"
        )
        where = f"{entry['file']} ({why})"
    if entry["file"] == NO_SOURCE:
        where = "code without line information (no debug info), per function"
    fh.write(f"\n-- {where}: {counts} ({100 * entry['share']:.2f}%)\n{margin}  source\n")
    if entry["lines"]:
        fh.write("\n".join([_line_text(row, width) for row in entry["lines"]]) + "\n")


def _not_found(file: str) -> str:
    return f"{file} (source not found; {not_found_hint(file)})"


def _line_text(row: dict, width: int) -> str:
    if row["line"] is None:
        return "-- ..."
    cells = " ".join(f"{c:>{width},}" if c else f"{'.':>{width}}" for c in row["counts"])
    if "function" in row:
        return f"{cells}  {row['function']}"
    if row["source"] is None:
        return f"{cells}  <line {row['line']}>"
    return f"{cells}  {row['source']}".rstrip()
