"""All that `annotate` (a function's lines, or `--all`) reads of a count run: its exact
counts per (function, file, line), the sources recorded with it, their fingerprints,
and the run's facts a listing needs (its start, whether its debug info names the
user's own files, its working directory as a source root).

Made once from the run's counts document (`of`) and kept beside the run in marshal's form
(store/kept_counts.py), so that `annotate` reads it through the run index without
importing DuckDB, whose import alone cost more CPU than cg_annotate's whole run on a
small program (docs/counts.md). The counts keep no instruction addresses and no calls
(a listing reads neither); each source file stays marshal's bytes until a listing shows it.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .counts import Counts, ExactCounts, Stamps


class RecordedSources(Mapping[str, list[str]]):
    """file -> its lines as recorded, each file decoded when first read."""

    def __init__(self, packed: dict[str, bytes]) -> None:
        self.packed = packed
        self.decoded: dict[str, list[str]] = {}

    def __getitem__(self, file: str) -> list[str]:
        lines = self.decoded.get(file)
        if lines is None:
            lines = self.decoded[file] = marshal.loads(self.packed[file])
        return lines

    def __contains__(self, file: object) -> bool:
        return file in self.packed

    def __iter__(self) -> Iterator[str]:
        return iter(self.packed)

    def __len__(self) -> int:
        return len(self.packed)


class CountListing(NamedTuple):  # not a dataclass: model/counts.py says why
    exact: ExactCounts  # per line, each recursion level (f'2) apart
    sources: Mapping[str, list[str]]
    stamps: Stamps
    started: float
    as_named: bool  # the run's own command: its debug info names the user's own files
    working_root: str | None  # the run's working directory as a source root, if it is one

    @staticmethod
    def of(
        counts: Counts, started: float, as_named: bool, working_root: str | None
    ) -> CountListing:
        return CountListing(
            counts.counts.by_line(), counts.sources, counts.stamps, started, as_named, working_root
        )

    def counts(self, *, split_recursion: bool = False) -> ExactCounts:
        """The counts as the views read them: recursion levels merged unless `split_recursion`."""
        return self.exact if split_recursion else self.exact.merged_recursion()

    def roots(self, given: list[Path]) -> list[Path]:
        """The --src folders, then the run's working directory (views/source.source_roots)."""
        return [*given, Path(self.working_root)] if self.working_root else list(given)

    def to_kept(self) -> dict[str, Any]:
        """The listing as store/kept_counts.py keeps it (marshal's types)."""
        return {
            "exact": self.exact.to_json(),
            "sources": {file: marshal.dumps(lines) for file, lines in self.sources.items()},
            "stamps": self.stamps,
            "started": self.started,
            "as_named": self.as_named,
            "working_root": self.working_root,
        }

    @staticmethod
    def from_kept(doc: dict[str, Any]) -> CountListing:
        return CountListing(
            ExactCounts.from_json(doc["exact"]),
            RecordedSources(doc["sources"]),
            doc["stamps"],
            doc["started"],
            doc["as_named"],
            doc["working_root"],
        )
