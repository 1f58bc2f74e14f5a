"""Where outputs write (a file or stdout) and the text outputs' shared helpers.

Text goes through rich: aligned tables, colour only when stdout is a terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import UserError

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import IO, Any

    from rich.console import Console
    from rich.text import Text

PIPE_WIDTH = 160
RICH_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE")  # make rich style any file


@contextmanager
def destination(path: str | None, binary: bool = False) -> Iterator[IO[Any]]:
    """The file at `path` opened for writing, or stdout for None or '-'."""
    if not path or path == "-":
        if binary:
            sys.stdout.flush()  # what was printed before comes first
        yield sys.stdout.buffer if binary else sys.stdout
        return
    try:
        with open(path, "wb") if binary else open(path, "w", encoding="utf-8") as fh:
            yield fh
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from e


def console_for(fh: IO[str]) -> Console:
    from rich.console import Console  # only text output needs rich: a command starts without it

    if fh is sys.stdout and sys.stdout.isatty():
        return Console()
    return Console(file=fh, no_color=True, width=pipe_width(), highlight=False, soft_wrap=False)


def pipe_width() -> int:
    """The width of text written off a terminal: $COLUMNS, else PIPE_WIDTH."""
    return int(os.environ.get("COLUMNS", PIPE_WIDTH))


def heading(fh: IO[str], text: str) -> None:
    """A line in bold on a terminal; elsewhere written as is, without importing rich
    (as rich would write it: no colour off a terminal unless FORCE_COLOR or
    TTY_COMPATIBLE says otherwise, and then rich writes it)."""
    if fh.isatty() or any(name in os.environ for name in RICH_TERMINAL_VARIABLES):
        console_for(fh).print(text, style="bold", highlight=False, markup=False, soft_wrap=True)
    else:
        fh.write(text + "\n")


def cell(text: str) -> Text:
    """A table cell shown as is: symbol names like `operator[]` are not rich markup."""
    from rich.text import Text

    return Text(text)


def pct(fraction: float) -> str:
    return f"{100.0 * fraction:6.2f}%"
