"""TopN as text: the `perfsleuth top` table.

Off a terminal, a table that fits the width is written as plain lines, laid out as rich
lays out this table (the header and the rows padded to the widest cell of each column,
two spaces between columns, the title padded to the table's width): importing rich
and rendering through it was a third of the CPU of `top` from its kept page. On a
terminal, or when rich would fold a cell, wrap the title, style the text (FORCE_COLOR,
TTY_COMPATIBLE) or measure a character otherwise, rich writes it.
"""

from __future__ import annotations

import os
import re
from typing import IO, TYPE_CHECKING

from .output import RICH_TERMINAL_VARIABLES, cell, console_for, pct, pipe_width

if TYPE_CHECKING:
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
    widths = [
        max([len(name), *(len(cells[i]) for cells in rows)]) for i, (name, _) in enumerate(columns)
    ]
    width = sum(widths) + len(GAP) * (len(widths) - 1)
    title_lines = _wrapped(title, width)
    if width > pipe_width() or title_lines is None:
        return None

    def line(cells: list[str]) -> str:
        return GAP.join(
            text.rjust(w) if kind == RIGHT else text.ljust(w)
            for text, w, (_, kind) in zip(cells, widths, columns, strict=True)
        )

    header = line([name for name, _ in columns])
    return [*title_lines, header, *(line(cells) for cells in rows)]


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
        cells = [pct(row["self"]), *([pct(row["total"])] if inclusive else [])]
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
