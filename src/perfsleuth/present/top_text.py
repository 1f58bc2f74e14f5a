"""TopN as text: the `perfsleuth top` table.

Off a terminal, a table that fits the width is written as plain lines, laid out as rich
lays out this table (the header and the rows padded to the widest cell of each column,
two spaces between columns, the title padded to the table's width): importing rich
and rendering through it was a third of the CPU of `top` from its kept page. A table
wider than the pipe is folded as rich folds it (its foldable columns narrowed, widest
first, their cells cut at the width). On a terminal, or when rich would wrap a cell at
its spaces, narrow a column that does not fold, wrap the title at a word wider than the
table, style the text (FORCE_COLOR, TTY_COMPATIBLE) or measure a character otherwise,
rich writes it.
"""

from __future__ import annotations

import os
import re

from .output import RICH_TERMINAL_VARIABLES, cell, console_for, pct, pipe_width

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import IO

    from rich.console import Console

RIGHT, NO_WRAP, FOLD = "right", "no wrap", "fold"  # how a column is laid out
GAP = "  "  # rich's padding of (0, 1) between two columns, none at the edges
# What rich measures one cell a character and writes as is: printable ASCII in cells; in the
# title, rich markup's "[" and an emoji code's ":" are left out, and the em dash added.
_PLAIN_CELL = re.compile(r"[ -~]*")
_PLAIN_TITLE = re.compile(r"[ -9;-Z\\^-~—]*")


def write(doc: dict, fh: IO[str]) -> None:
    lines = _plain_lines(doc, fh)
    if lines is None:
        render(doc, console_for(fh))
    else:
        fh.write("".join(f"{line}\n" for line in lines))


def render(doc: dict, console: Console) -> None:
    from rich.table import Table

    title, columns, rows = _table(doc)
    table = Table(
        title=title,
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
    )
    for name, kind in columns:
        if kind == RIGHT:
            table.add_column(name, justify="right", no_wrap=True)
        elif kind == NO_WRAP:
            table.add_column(name, no_wrap=True)
        else:
            table.add_column(name, overflow="fold")
    for cells in rows:
        table.add_row(*(cell(c) for c in cells))
    console.print(table)


def _plain_lines(doc: dict, fh: IO[str]) -> list[str] | None:
    """The table's lines as rich writes them off a terminal, or None where rich must."""
    if fh.isatty() or any(name in os.environ for name in RICH_TERMINAL_VARIABLES):
        return None
    title, columns, rows = _table(doc)
    texts = [name for name, _ in columns] + [c for cells in rows for c in cells]
    if not _PLAIN_TITLE.fullmatch(title) or not all(_PLAIN_CELL.fullmatch(t) for t in texts):
        return None
    widths = _folded_widths(columns, rows)
    if widths is None:
        return None
    title_lines = _wrapped(title, sum(widths) + len(GAP) * (len(widths) - 1))
    if title_lines is None:
        return None

    def lines(cells: list[str]) -> list[str]:
        pieces = [_chopped(text, w) for text, w in zip(cells, widths, strict=True)]
        return [
            GAP.join(
                (part[k] if k < len(part) else "").rjust(w)
                if kind == RIGHT
                else (part[k] if k < len(part) else "").ljust(w)
                for part, w, (_, kind) in zip(pieces, widths, columns, strict=True)
            )
            for k in range(max(len(part) for part in pieces))
        ]

    out = [*title_lines, *lines([name for name, _ in columns])]
    for cells in rows:
        out += lines(cells)
    return out


def _folded_widths(columns: list[tuple[str, str]], rows: list[list[str]]) -> list[int] | None:
    """Each column's width as rich lays the table out in the pipe's width: a table wider
    than it has its foldable columns narrowed, widest first (rich's collapse of column
    widths), and their cells cut into lines of that width. None where rich would do
    more: narrow a column that does not fold, fold a header, or wrap a cell at its
    spaces. lz4's and brotli's `top`, whose file:line column outgrew the width, imported
    rich for that (0.05-0.08 CPU-s, most of the view)."""
    widths = [
        max([len(name), *(len(cells[i]) for cells in rows)]) for i, (name, _) in enumerate(columns)
    ]
    pads = [(i > 0) + (i < len(widths) - 1) for i in range(len(widths))]
    limit = pipe_width()
    if sum(widths) + sum(pads) <= limit:
        return widths
    padded = [min(w + p, limit) for w, p in zip(widths, pads, strict=True)]  # rich measures so
    narrowed = _collapsed(padded, [kind == FOLD for _, kind in columns], limit)
    if sum(narrowed) > limit:
        return None  # rich narrows every column then
    out = [n - p for n, p in zip(narrowed, pads, strict=True)]
    for i, (name, _kind) in enumerate(columns):
        cut = [cells[i] for cells in rows if len(cells[i]) > out[i]]
        if out[i] < widths[i] and (len(name) > out[i] or any(" " in c for c in cut)):
            return None
    return out


def _collapsed(widths: list[int], wrapable: list[bool], limit: int) -> list[int]:
    """rich's Table._collapse_widths: the widest foldable columns narrowed to the next
    widest, and again, until the table fits or none is left to narrow."""
    excess = sum(widths) - limit
    while excess > 0 and any(wrapable):
        widest = max(w for w, can in zip(widths, wrapable, strict=True) if can)
        second = max(
            w if can and w != widest else 0 for w, can in zip(widths, wrapable, strict=True)
        )
        ratios = [int(w == widest and can) for w, can in zip(widths, wrapable, strict=True)]
        if not any(ratios) or widest == second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - limit
    return widths


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """rich's _ratio.ratio_reduce (importing that module costs 0.03 CPU-s)."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    left, weight, out = total, sum(ratios), []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and weight > 0:
            cut = min(maximum, round(ratio * left / weight))
            out.append(value - cut)
            left -= cut
            weight -= ratio
        else:
            out.append(value)
    return out


def _chopped(text: str, width: int) -> list[str]:
    """A cell's lines: cut every WIDTH characters (rich's fold of a word wider than its
    column; _folded_widths leaves cells with spaces to rich)."""
    if len(text) <= width:
        return [text]
    return [text[i : i + width] for i in range(0, len(text), width)]


def _wrapped(text: str, width: int) -> list[str] | None:
    """TEXT's lines as rich wraps and pads a left-justified title to WIDTH (rich's
    divide_line, then each line's whitespace past the width cut); None for a word
    wider than WIDTH, which rich would fold."""
    breaks, used = [0], 0
    for word in re.finditer(r"\s*\S+\s*", text):
        length = len(word.group().rstrip())
        if length > width - used and length > width:
            return None
        if length > width - used and used and word.start():
            breaks.append(word.start())
            used = 0
        used += len(word.group())
    pieces = [text[a:b] for a, b in zip(breaks, [*breaks[1:], len(text)], strict=True)]
    return [_cut_end(piece, width).ljust(width) for piece in pieces]


def _cut_end(line: str, width: int) -> str:
    """LINE without the trailing whitespace past WIDTH (rich's Text.rstrip_end)."""
    excess = len(line) - width
    if excess <= 0:
        return line
    trailing = len(line) - len(line.rstrip())
    return line[: len(line) - min(trailing, excess)]


def _table(doc: dict) -> tuple[str, list[tuple[str, str]], list[list[str]]]:
    """The title, the columns (name, layout) and the rows' cells of a TopN."""
    by = doc["by"]
    title = (
        f"run {doc['run']} — {_counted(doc)}, {doc['total']:,.0f} {doc['unit']} in total, by {by}"
    )
    # counts without calls (cachegrind's) have no inclusive cost: no total column
    inclusive = doc.get("inclusive", True)
    if not inclusive:
        title += " (self counts only: the file records no calls)"
    name = {"function": "function", "line": "function", "file": "file", "dso": "DSO"}[by]
    columns = [("self", RIGHT), *([("total", RIGHT)] if inclusive else []), (name, FOLD)]
    if by in ("function", "line"):
        columns += [("DSO", NO_WRAP), ("file:line", FOLD)]
    rows = []
    for row in doc["rows"]:
        total = ("≤" if row.get("total_at_most") else "") + pct(row["total"])
        cells = [pct(row["self"]), *([total] if inclusive else [])]
        if by in ("function", "line"):
            cells += [row["function"], _short_dso(row["dso"]), _location(row)]
        elif by == "file":
            cells.append(row["file"])
        else:
            cells.append(row["dso"])
        rows.append(cells)
    return title, columns, rows


def _counted(doc: dict) -> str:
    if doc.get("exact"):
        return f"exact counts ({doc['exact']})"
    return f"{doc['samples']:,} samples"


def _location(row: dict) -> str:
    if row.get("file"):
        return f"{row['file']}:{row['line']}" if row.get("line") else row["file"]
    return ""


def _short_dso(dso: str) -> str:
    return dso.rsplit("/", 1)[-1]
