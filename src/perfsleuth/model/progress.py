"""How long work reports its progress, without printing: a protocol object.

Recorders, readers and analyses that can take more than a few seconds take a
`Progress` and call it; they never print. The entry points pass a terminal display
(present/progress.py) or `SILENT`, the default, which does nothing.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def phase(self, name: str, total: int | None = None) -> None:
        """A new step of the work: its name, and how many units it has (None: unknown)."""

    def advance(self, done: int = 1) -> None:
        """`done` more units of the current phase are finished."""


class Silent:
    """Progress nobody watches."""

    def phase(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, done: int = 1) -> None:
        pass


SILENT: Progress = Silent()
