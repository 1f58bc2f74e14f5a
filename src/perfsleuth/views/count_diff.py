"""Exact per-function and per-line change between two count runs.

Counts are exact, so there is no noise to filter: every function and line whose
count changed is listed, largest change first, with the change in instructions
and as a share of run A's total.

An edit moves the lines below it, so lines are paired by their text as it was
when each run was recorded (kept in the count document), not by their number:
inserting a line does not make every line after it look changed.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from rich.console import Console

from ..formats import count_document
from ..formats.callgrind import CallgrindData

Sources = dict[str, list[str]]  # file -> its lines, as recorded with the run
LineKey = tuple[str, int | None, int | None]  # file, line in A, line in B


def count_diff(
    a: CallgrindData,
    b: CallgrindData,
    *,
    sources: tuple[Sources, Sources] = ({}, {}),
    event: str = "Ir",
    n: int = 0,
) -> dict:
    if event not in a.events or event not in b.events:
        event = a.events[0]
    total_a, total_b = count_document.total(a, event), count_document.total(b, event)
    functions = changes(
        count_document.function_self(a, event, merge_unnamed=True),
        count_document.function_self(b, event, merge_unnamed=True),
        total_a,
    )
    lines_a, lines_b = count_document.line_self(a, event), count_document.line_self(b, event)
    pairs = align(lines_a, lines_b, *sources)
    lines = changes(
        {key: lines_a.get((key[0], key[1] or 0), 0) for key in pairs if key[1]},
        {key: lines_b.get((key[0], key[2] or 0), 0) for key in pairs if key[2]},
        total_a,
    )
    limit = n if n > 0 else None
    return {
        "event": event,
        "total_a": total_a,
        "total_b": total_b,
        "delta": total_b - total_a,
        "delta_share": (total_b - total_a) / total_a if total_a else 0.0,
        "functions": [{"function": key, **row} for key, row in functions[:limit]],
        "lines": [_line_row(key, row, sources) for key, row in lines[:limit]],
        "functions_changed": len(functions),
        "lines_changed": len(lines),
    }


def align(
    a: dict[tuple[str, int], int], b: dict[tuple[str, int], int], src_a: Sources, src_b: Sources
) -> list[LineKey]:
    """Counted lines of both runs, paired file by file: by text where both runs kept
    their source lines, else by number. Unpaired lines have None on the other side."""
    files = {file for file, _ in a} | {file for file, _ in b}
    pairs: list[LineKey] = []
    for file in sorted(files):
        la = sorted(line for f, line in a if f == file)
        lb = sorted(line for f, line in b if f == file)
        if file in src_a and file in src_b:
            pairs += _by_text(file, la, lb, src_a[file], src_b[file])
        else:
            pairs += [
                (file, n if n in la else None, n if n in lb else None) for n in sorted({*la, *lb})
            ]
    return pairs


def _by_text(
    file: str, la: list[int], lb: list[int], text_a: list[str], text_b: list[str]
) -> list[LineKey]:
    # A line whose text is unknown gets a placeholder that matches nothing.
    words_a = [_text(text_a, n) or f"\0a{n}" for n in la]
    words_b = [_text(text_b, n) or f"\0b{n}" for n in lb]
    matcher = SequenceMatcher(None, words_a, words_b, autojunk=False)
    paired_a: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            paired_a[la[block.a + k]] = lb[block.b + k]
    paired_b = set(paired_a.values())
    pairs: list[LineKey] = [(file, n, paired_a.get(n)) for n in la]
    return pairs + [(file, None, n) for n in lb if n not in paired_b]


def _line_row(key: LineKey, row: dict, sources: tuple[Sources, Sources]) -> dict:
    file, line_a, line_b = key
    text = _text(sources[1].get(file, []), line_b) or _text(sources[0].get(file, []), line_a)
    line = line_b or line_a or 0
    return {"file": file, "line": line, "line_a": line_a, "line_b": line_b, "source": text, **row}


def _text(lines: list[str], number: int | None) -> str | None:
    return lines[number - 1] if number and 0 < number <= len(lines) else None


def changes(a: dict, b: dict, total_a: int) -> list[tuple]:
    """(key, {"a", "b", "delta", "delta_share"}) for every key whose count changed."""
    rows = []
    for key in set(a) | set(b):
        before, after = a.get(key, 0), b.get(key, 0)
        if before != after:
            delta = after - before
            share = delta / total_a if total_a else 0.0
            rows.append((key, {"a": before, "b": after, "delta": delta, "delta_share": share}))
    rows.sort(key=lambda item: (-abs(item[1]["delta"]), str(item[0])))
    return rows


def render(doc: dict, console: Console) -> None:
    event = doc["event"]
    console.print(
        f"run {doc['a']} → run {doc['b']}: {doc['total_a']:,} → {doc['total_b']:,} {event} "
        f"({doc['delta']:+,}, {100 * doc['delta_share']:+.3f}%)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    _section(console, "function", doc["functions"], doc["functions_changed"], event)
    _section(console, "line", doc["lines"], doc["lines_changed"], event)


def _section(console: Console, what: str, rows: list[dict], changed: int, event: str) -> None:
    shown = f"{len(rows)} of {changed}" if len(rows) < changed else str(changed)
    console.print(
        f"\n{shown} {what}{'' if changed == 1 else 's'} changed",
        style="bold",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if not rows:
        return
    console.print(
        f"{event + ' A':>15} {event + ' B':>15} {'delta':>15} {'% of A':>9}  {what}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for row in rows:
        name = row["function"] if what == "function" else _line_name(row)
        console.print(
            f"{row['a']:>15,} {row['b']:>15,} {row['delta']:>+15,} "
            f"{100 * row['delta_share']:>+8.3f}%  {name}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _line_name(row: dict) -> str:
    moved = row["line_a"] and row["line_b"] and row["line_a"] != row["line_b"]
    where = f"{row['line_a']}→{row['line_b']}" if moved else str(row["line"])
    text = f"  {row['source'].strip()}" if row.get("source") else ""
    return f"{row['file']}:{where}{text}"
