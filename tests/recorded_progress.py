"""A Progress (model/progress.py) for tests: it keeps what it was told."""

from __future__ import annotations


class Recorded:
    """A Progress that keeps what it was told."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, int | None]] = []
        self.done = 0

    def phase(self, name: str, total: int | None = None) -> None:
        self.phases.append((name, total))

    def advance(self, done: int = 1) -> None:
        self.done += done
