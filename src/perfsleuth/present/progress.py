"""The progress display of long commands on a terminal: phase, done/total, elapsed, left.

`display(quiet)` yields a `model.progress.Progress`: a rich progress bar on stderr
when stderr is a terminal, `SILENT` when it is not or with --quiet, so logs and
pipes get no control characters. The bar goes away when the work is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..model import progress as model

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


class TerminalProgress:
    """One bar that each phase restarts; nothing is drawn before the first phase, so
    commands that report no progress leave the terminal alone."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task: TaskID | None = None

    def phase(self, name: str, total: int | None = None) -> None:
        if self.task is None:
            self.bar.start()
        else:
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task(name, total=total)

    def stop(self) -> None:
        if self.task is not None:
            self.bar.stop()

    def advance(self, done: int = 1) -> None:
        if self.task is not None:
            self.bar.advance(self.task, done)


@contextmanager
def display(quiet: bool = False, console: Console | None = None) -> Iterator[model.Progress]:
    """A progress display on `console` (default: stderr) while the block runs."""
    if quiet:  # before rich loads: 0.02 CPU-s of `import --quiet`
        yield model.SILENT
        return
    # rich loads here, not when the output registry scans this package at start-up
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield model.SILENT
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    shown = TerminalProgress(Progress(*columns, console=console, transient=True))
    try:
        yield shown
    finally:
        shown.stop()
