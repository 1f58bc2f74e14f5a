"""All that `diff` of two count runs reads of a run: for every event, the run's total,
the self count of each function by name and of each counted line, with the text the
line had when the run was recorded.

Made once from the run's counts document (`of`) and kept beside the run as compact
JSON (store/kept_counts.py): reading it takes a few ms, where reading the whole
document (its callgrind out file, sources and tables) and summing its 78,000 cells took
~50 ms a run of speedtest1. This module imports nothing from perfsleuth at run time,
and its types are plain classes compared by value (dataclasses' import costs a sixth of
cg_diff's run on a small program, typing's NamedTuple a sixteenth), so a `diff` that reads
it starts fast.
"""

from __future__ import annotations

from .slot_values import slot_fields

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import Any

    from .counts import Counts, ExactCounts


class FileLines:
    """A file's counted lines in order, their counts (one list per event) and, when the
    run kept the file's source, each line's text (None past the file's end) and the
    SHA-256 of the file as the run recorded it."""

    __slots__ = ("lines", "counts", "texts", "digest")

    def __init__(
        self,
        lines: list[int],
        counts: list[list[int]],
        texts: list[str | None] | None,
        digest: str | None = None,
    ) -> None:
        self.lines = lines
        self.counts = counts
        self.texts = texts
        self.digest = digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileLines) and slot_fields(self) == slot_fields(other)


class LineCounts:
    __slots__ = (
        "events",
        "totals",
        "names",
        "counts",
        "split_names",
        "split_counts",
        "files",
        "tool",
        "spans",
    )

    def __init__(
        self,
        events: list[str],
        totals: list[int],
        names: list[str],  # functions by name, recursion levels (f'2) merged into f
        counts: list[list[int]],  # per event, the self count of each of `names`
        split_names: list[str],  # the same with each recursion level apart
        split_counts: list[list[int]],
        files: dict[str, FileLines],
        tool: str = "",  # valgrind's tool that counted the run: callgrind or cachegrind
        spans: dict[str, list] | None = None,  # see _spans
    ) -> None:
        self.events = events
        self.totals = totals
        self.names = names
        self.counts = counts
        self.split_names = split_names
        self.split_counts = split_counts
        self.files = files
        self.tool = tool
        self.spans = {} if spans is None else spans

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LineCounts) and slot_fields(self) == slot_fields(other)

    @staticmethod
    def of(counts: Counts) -> LineCounts:
        """A count run's line counts, from its counts document."""
        exact = counts.counts
        merged, split = _function_self(exact.merged_recursion()), _function_self(exact)
        per_event = [exact.line_self(event) for event in exact.events]
        by_file: dict[str, list[int]] = {}
        for file, line in per_event[0] if per_event else {}:
            by_file.setdefault(file, []).append(line)
        files = {}
        for file, lines in sorted(by_file.items()):
            lines.sort()
            source = counts.sources.get(file)
            stamp = counts.stamps.get(file) if source is not None else None
            files[file] = FileLines(
                lines,
                [[costs[(file, line)] for line in lines] for costs in per_event],
                None if source is None else [_text(source, line) for line in lines],
                stamp[2] if stamp else None,
            )
        creator = str(exact.meta.get("creator", ""))  # cachegrind's files name none
        tool = "callgrind" if "callgrind" in creator else creator or "cachegrind"
        return LineCounts(
            list(exact.events),
            list(exact.totals),
            *merged,
            *split,
            files=files,
            tool=tool,
            spans=_spans(exact.merged_recursion()),
        )

    def column(self, event: str) -> int:
        """The column of `event`'s counts (the first for an event the run lacks)."""
        return self.events.index(event) if event in self.events else 0

    def total(self, event: str) -> int:
        return self.totals[self.events.index(event)] if event in self.events else 0

    def function_self(self, event: str, *, split_recursion: bool = False) -> dict[str, int]:
        """Exact self count of `event` per function name."""
        names, counts = (
            (self.split_names, self.split_counts) if split_recursion else (self.names, self.counts)
        )
        return dict(zip(names, counts[self.column(event)], strict=True))

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "totals": self.totals,
            "names": self.names,
            "counts": self.counts,
            "split_names": self.split_names,
            "split_counts": self.split_counts,
            "files": {
                file: [lines.lines, lines.counts, lines.texts, lines.digest]
                for file, lines in self.files.items()
            },
            "tool": self.tool,
            "spans": self.spans,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> LineCounts:
        return LineCounts(
            doc["events"],
            doc["totals"],
            doc["names"],
            doc["counts"],
            doc["split_names"],
            doc["split_counts"],
            {file: FileLines(*lines) for file, lines in doc["files"].items()},
            doc.get("tool", ""),
            doc.get("spans"),
        )


def _function_self(exact: ExactCounts) -> tuple[list[str], list[list[int]]]:
    """Function names (an object's code without a symbol under one name, so that two
    builds compare) and their self count of every event."""
    per_event = [exact.function_self(event, merge_unnamed=True) for event in exact.events]
    names = list(per_event[0]) if per_event else []
    return names, [[costs[name] for name in names] for costs in per_event]


def _text(lines: list[str], number: int) -> str | None:
    return lines[number - 1] if 0 < number <= len(lines) else None


def _spans(exact: ExactCounts) -> dict[str, list]:
    """Each named function's own lines: [file, first, last], from its entry line
    (entry_sites) to the last line it has counted in that file before the next function's
    entry there. `diff` reads them to tell a function no longer inlined (or newly inlined)
    from a new one: the other run counted its lines inside its callers."""
    from bisect import bisect_right

    from .counts import is_address

    sites = exact.entry_sites()
    starts: dict[str, list[int]] = {}
    for file, line in sites:
        if file and line > 0:
            starts.setdefault(file, []).append(line)
    for lines in starts.values():
        lines.sort()
    files = exact.files
    last = [0] * len(sites)
    cells = exact.cells
    for fid, file, line in zip(
        cells.column("fn"), cells.column("file"), cells.column("line"), strict=True
    ):
        own, entry = sites[fid]
        if line > last[fid] and line >= entry > 0 and files[file] == own:
            last[fid] = line
    spans: dict[str, list] = {}
    for fid, ((_ob, fn), (file, entry)) in enumerate(zip(exact.functions, sites, strict=True)):
        if not last[fid] or is_address(fn) or fn in spans:
            continue
        following = starts[file][bisect_right(starts[file], entry) :]
        spans[fn] = [file, entry, min([last[fid], *(n - 1 for n in following[:1])])]
    return spans
