"""`perfsleuth diff` as text: shares of each run for sampled runs (views.diff.diff),
exact deltas for count runs (views.count_diff.exact_diff).

A count run's exact deltas are plain lines (thousands of them, only two headings bold
on a terminal), written straight to the file: rich is imported only for a terminal's
bold or a sampled diff's table, since its import alone was a fifth of the CPU of
`diff` of two count runs."""

from __future__ import annotations

from .output import cell, console_for, heading, pct

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import IO

    from rich.console import Console


def write(doc: dict, fh: IO[str]) -> None:
    if "event" in doc:
        _write_exact(doc, fh)
    else:
        _render_shares(doc, console_for(fh))


def _totals(doc: dict) -> str:
    """Both totals, and their ratio where they are in one unit (instructions against
    nanoseconds have none)."""
    a, b = doc["total_a"], doc["total_b"]
    if "/" in doc["unit"]:
        unit_a, unit_b = doc["unit"].split("/", 1)
        return f"totals {a:,.0f} {unit_a} and {b:,.0f} {unit_b}, not comparable"
    ratio = f" ({b / a:.3f}×)" if a else ""
    return f"total {a:,.0f} → {b:,.0f} {doc['unit']}{ratio}"


def _render_shares(doc: dict, console: Console) -> None:
    from rich.table import Table

    table = Table(
        title=f"run {doc['a']} → run {doc['b']}: {_totals(doc)}; shares of each run's total",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    for col in ("self A", "self B", "Δ self", "total A", "total B", "Δ total"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column(doc["by"], overflow="fold")
    for r in doc["rows"]:
        name = r["function"] or r["file"] or r["dso"]
        if doc["by"] == "line":
            name = f"{r['function']} {r['file']}:{r['line']}"
        table.add_row(
            pct(r["self_a"]),
            pct(r["self_b"]),
            _signed(r["delta_self"]),
            pct(r["total_a"]),
            pct(r["total_b"]),
            _signed(r["delta_total"]),
            cell(name),
        )
    console.print(table)


def _signed(fraction: float) -> str:
    return f"{100.0 * fraction:+7.2f}%"


def _write_exact(doc: dict, fh: IO[str]) -> None:
    event = doc["event"]
    fh.write(
        f"run {doc['a']} → run {doc['b']}: {doc['total_a']:,} → {doc['total_b']:,} {event} "
        f"({doc['delta']:+,}, {100 * doc['delta_share']:+.3f}%)\n"
    )
    moved = doc.get("files_moved") or []
    if moved:
        many = f"{len(moved)} files" if len(moved) > 1 else "1 file"
        fh.write(
            f"{many} compared with their namesake in another directory: {' → '.join(moved[0])}"
        )
        fh.write(", …\n" if len(moved) > 1 else "\n")
    _section(fh, "function", doc["functions"], doc["functions_changed"], event)
    _inlining(fh, doc, event)
    _section(fh, "line", doc["lines"], doc["lines_changed"], event)


def _inlining(fh: IO[str], doc: dict, event: str) -> None:
    """The functions one run calls and the other inlined (views.count_diff.inlining_changes)."""
    for row in doc.get("inlining") or ():
        fh.write(inlining_sentence(row, doc["a"], doc["b"], event) + "\n")


def inlining_sentence(row: dict, a: str, b: str, event: str) -> str:
    """What one row of views.count_diff.inlining_changes says, of runs A and B."""
    calls, inlines = (b, a) if row["inlined_in"] == "a" else (a, b)
    return (
        f"{row['function']} is a function of its own in run {calls} and was inlined in run "
        f"{inlines}: run {inlines} counted {row['count']:,} {event} on its lines "
        f"({row['file']}:{row['first']}-{row['last']}) inside its callers"
    )


def _section(fh: IO[str], what: str, rows: list[dict], changed: int, event: str) -> None:
    shown = f"{len(rows)} of {changed}" if len(rows) < changed else str(changed)
    heading(fh, f"\n{shown} {what}{'' if changed == 1 else 's'} changed")
    if not rows:
        return
    lines = [f"{event + ' A':>15} {event + ' B':>15} {'delta':>15} {'% of A':>9}  {what}"]
    add = lines.append
    # one f-string a row, its name's parts in it: a row was a fifth of `diff`'s CPU on
    # tcc's 7,263 changed lines, its name's call and string a third of the row's
    for row in rows:
        counts = f"{row['a']:>15,} {row['b']:>15,} {row['delta']:>+15,}"
        share = 100 * row["delta_share"]
        if what == "function":
            add(f"{counts} {share:>+8.3f}%  {row['function']}")
            continue
        line_a, line_b, source = row["line_a"], row["line_b"], row.get("source")
        where = f"{line_a}→{line_b}" if line_a and line_b and line_a != line_b else row["line"]
        text = f"  {source.strip()}" if source else ""
        add(f"{counts} {share:>+8.3f}%  {row['file']}:{where}{text}")
    lines.append("")
    fh.write("\n".join(lines))
