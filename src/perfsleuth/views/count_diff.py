"""What changed between two count runs (`record --mode count`): their numbers are exact,
so the counts themselves are compared: every function and line whose count changed,
with the change in instructions and as a share of run A's total. There is no noise to
filter.

Functions are paired by name alone, since a rebuilt binary may have another file name.
An edit moves the lines below it, so where both runs recorded their source files (count
runs do) lines are paired by their text as it was then, not by their number: inserting
a line does not make every line after it look changed.

Each run is read as its LineCounts (model/line_counts.py), and this module imports
nothing else of perfsleuth: `diff` of two count runs starts fast.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from ..model.line_counts import FileLines, LineCounts


def exact_diff(
    a: LineCounts, b: LineCounts, *, event: str = "Ir", n: int = 0, split_recursion: bool = False
) -> dict:
    """Exact counts per function and per line, for two count runs."""
    if event not in a.events or event not in b.events:
        event = a.events[0]
    total_a, total_b = a.total(event), b.total(event)
    functions = changes(
        a.function_self(event, split_recursion=split_recursion),
        b.function_self(event, split_recursion=split_recursion),
        total_a,
    )
    lines = line_changes(a, b, event, total_a)
    limit = n if n > 0 else None
    return {
        "event": event,
        "total_a": total_a,
        "total_b": total_b,
        "delta": total_b - total_a,
        "delta_share": (total_b - total_a) / total_a if total_a else 0.0,
        "functions": [{"function": key, **row} for key, row in functions[:limit]],
        "lines": [_line_row(key, row) for key, row in lines[:limit]],
        "functions_changed": len(functions),
        "lines_changed": len(lines),
    }


def line_changes(a: LineCounts, b: LineCounts, event: str, total_a: int) -> list[tuple]:
    """changes() of every counted line, lines paired by align_file, keyed by
    (file, line in A, line in B, the line's text)."""
    column_a, column_b = a.index(event), b.index(event)
    rows = []
    for file in sorted(a.files.keys() | b.files.keys()):
        in_a, in_b = a.files.get(file), b.files.get(file)
        counts_a = dict(zip(in_a.lines, in_a.counts[column_a], strict=True)) if in_a else {}
        counts_b = dict(zip(in_b.lines, in_b.counts[column_b], strict=True)) if in_b else {}
        text_a = _texts(in_a)
        text_b = _texts(in_b)
        for line_a, line_b in align_file(in_a, in_b):
            before = counts_a[line_a] if line_a else 0
            after = counts_b[line_b] if line_b else 0
            if before != after:
                delta = after - before
                text = (text_b.get(line_b) if line_b else None) or (
                    text_a.get(line_a) if line_a else None
                )
                row = {
                    "a": before,
                    "b": after,
                    "delta": delta,
                    "delta_share": delta / total_a if total_a else 0.0,
                }
                rows.append(((file, line_a, line_b, text), row))
    rows.sort(key=lambda item: (-abs(item[1]["delta"]), str(item[0][:3])))
    return rows


def _texts(lines: FileLines | None) -> dict[int, str | None]:
    if lines is None or lines.texts is None:
        return {}
    return dict(zip(lines.lines, lines.texts, strict=True))


def align_file(a: FileLines | None, b: FileLines | None) -> list[tuple[int | None, int | None]]:
    """A file's counted lines of both runs paired: by text where both runs kept the
    file's source, else by number. Unpaired lines have None on the other side."""
    la, lb = a.lines if a else [], b.lines if b else []
    if a and b and a.texts is not None and b.texts is not None:
        return _by_text(la, lb, a.texts, b.texts)
    in_a, in_b = set(la), set(lb)
    return [(n if n in in_a else None, n if n in in_b else None) for n in sorted(in_a | in_b)]


def _by_text(
    la: list[int], lb: list[int], text_a: list[str | None], text_b: list[str | None]
) -> list[tuple[int | None, int | None]]:
    # A line whose text is unknown gets a placeholder that matches nothing.
    words_a = [text or f"\0a{n}" for n, text in zip(la, text_a, strict=True)]
    words_b = [text or f"\0b{n}" for n, text in zip(lb, text_b, strict=True)]
    if words_a == words_b:  # the same source: every line pairs with itself
        return list(zip(la, lb, strict=True))
    matcher = SequenceMatcher(None, words_a, words_b, autojunk=False)
    paired_a: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            paired_a[la[block.a + k]] = lb[block.b + k]
    paired_b = set(paired_a.values())
    pairs: list[tuple[int | None, int | None]] = [(n, paired_a.get(n)) for n in la]
    return pairs + [(None, n) for n in lb if n not in paired_b]


def _line_row(key: tuple, row: dict) -> dict:
    file, line_a, line_b, text = key
    line = line_b or line_a or 0
    return {"file": file, "line": line, "line_a": line_a, "line_b": line_b, "source": text, **row}


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
