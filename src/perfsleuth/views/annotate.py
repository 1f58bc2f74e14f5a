"""Source lines with their cost, whatever the unit.

A listing lays the cost of each line of a file (line -> cost columns) beside the
file's text: the text recorded with the run where there is one (count runs keep
their sources, so a listing stays right after the files are edited), else the
file debug info names, as is or under a --src root.

* sampled runs: views/source.py's annotate document (the web UI's, whole files); the
  CLI prints a window of it, CONTEXT_LINES around the function's costed lines.
* `annotate_counts` (count runs): the exact count of every event per line, summed
  over the functions on that line; every file above a threshold (`annotate
  --all`), or the lines of some functions (`annotate FUNC`). Made to be diffed:
  files come in path order, tabs are expanded, gaps are marked, and nothing
  depends on the time or the run's order, so two runs of a changed program
  compared with `diff` show exactly the lines whose counts moved.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.counts import NO_SOURCE, ExactCounts, Stamps, stale_sources
from ..model.source_lines import source_lines

if TYPE_CHECKING:  # the type alone: a count run's listing reads no profile
    from ..model.profile import Profile

# file -> its lines as recorded with the run (model/counts.Sources, or a kept listing's
# sources, decoded as they are read: model/count_listing.RecordedSources)
Recorded = Mapping[str, list[str]]

CONTEXT_LINES = 3

# where rustc's debug info places Rust's standard library: /rustc/<commit>/library/...,
# which rustup's rust-src component installs as <sysroot>/lib/rustlib/src/rust/library/...
RUST_STD = re.compile(r"^/rustc/[0-9a-f]{40}/")
RUST_SRC_HINT = (
    "Rust's standard library: `rustup component add rust-src`, then "
    "--src $(rustc --print sysroot)/lib/rustlib/src/rust"
)


def not_found_hint(file: str) -> str:
    """What to do about a source file not found."""
    return RUST_SRC_HINT if RUST_STD.match(file) else "pass --src DIR"


def line_costs(profile: Profile, function: str) -> dict[tuple[str, int], list[float]]:
    """(file, line) -> [self, total] weight of FUNCTION's frames at that line."""
    frames = profile.frames
    costs: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for sid, weight in zip(profile.sample_stack, profile.sample_weight, strict=True):
        stack = profile.stacks[sid]
        seen = set()
        for i, fid in enumerate(stack):
            f = frames[fid]
            if f.function != function:
                continue
            key = (f.file, f.line)
            if i == 0:
                costs[key][0] += weight
            if key not in seen:
                costs[key][1] += weight
                seen.add(key)
    return costs


def find_source(name: str, roots: list[Path], as_named: bool = False) -> Path | None:
    """The file debug info names, under one of the source roots (after following
    symlinks), or, when the run's own debug info is trusted (`as_named`: a recorded
    run), at the absolute path it names. Never relative to the current directory. Rust's
    standard library (/rustc/<commit>/library/...) is under a root as library/...: the
    --src of rustup's rust-src component."""
    if not name or "\0" in name or ".." in Path(name).parts:
        return None
    path = Path(name)
    if as_named and path.is_absolute() and path.is_file():
        return path
    relative = path.relative_to(path.anchor) if path.is_absolute() else path
    if RUST_STD.match(name):
        relative = Path(RUST_STD.sub("", name))  # library/core/src/..., under rust-src
    for root in roots:
        real_root = root.resolve()
        candidates = [path] if path.is_absolute() else []
        for candidate in [*candidates, real_root / relative, real_root / path.name]:
            real = candidate.resolve()
            if real.is_relative_to(real_root) and real.is_file():
                return real
    return None


def source_text(
    file: str, roots: list[Path], recorded: Recorded, as_named: bool = False
) -> tuple[Path | None, list[str]]:
    """Where a file's text comes from and its lines: as recorded with the run, else
    as found on disk now (no path and no lines when it is nowhere)."""
    if file in recorded:
        return Path(file), recorded[file]
    source = find_source(file, roots, as_named)
    return source, source_lines(source.read_text(errors="replace")) if source else []


def _line(text: list[str], number: int) -> str | None:
    return text[number - 1] if 0 < number <= len(text) else None


# -- count runs: exact counts of every event ----------------------------------------


def annotate_counts(
    exact: ExactCounts,
    roots: list[Path],
    *,
    threshold: float,
    context: int | None,
    functions: set[str] | None = None,
    recorded: Recorded | None = None,
    as_named: bool = False,
) -> dict:
    """The `annotate --all` document; `threshold` is a fraction of the first event.
    With `functions`, only those functions' lines (`annotate FUNC` on a count run), the
    file of their own lines first: a Rust function's main.rs came after the 40 files of
    std it inlines code from, in path order."""
    per_file = exact.file_lines(functions)
    own = exact.own_site_files(functions) if functions else set()
    total = exact.totals[0] if exact.totals else 0
    width = len(exact.events)
    files = []
    hidden = 0
    for file in sorted(per_file, key=lambda name: (name not in own, name)):
        lines = per_file[file]
        counts = _sum(lines.values(), width)
        if total and counts[0] < threshold * total:
            hidden += 1
        elif file == NO_SOURCE:
            files.append(_no_source_entry(exact.unlocated(functions), counts, total))
        else:
            source = source_text(file, roots, recorded or {}, as_named)
            files.append(_file_entry(file, lines, counts, total, source, context))
    return {
        "events": list(exact.events),
        "totals": dict(zip(exact.events, exact.totals, strict=False)),
        "threshold": threshold,
        "files": files,
        "files_below_threshold": hidden,
    }


def changed_sources(doc: dict, recorded: Recorded, stamps: Stamps, started: float) -> list[str]:
    """What a listing read from disk that is not the file the run counted: a file whose
    content differs from its fingerprint at record time, or, for runs recorded before
    fingerprints were kept, a file modified after the run started."""
    said = []
    for entry in doc["files"]:
        path, file = entry.get("path"), entry["file"]
        if not path or file in recorded:
            continue
        try:
            stat = Path(path).stat()
            stamp = stamps.get(file)
            if stamp is None:
                changed = stat.st_mtime > started
            else:
                moved = (stat.st_size, stat.st_mtime) != (stamp[0], stamp[1])
                changed = moved and _sha256(Path(path)) != stamp[2]
        except OSError:
            continue
        if changed:
            how = "changed since" if stamp is not None else "is newer than"
            said.append(f"{path} {how} the run; its lines may not match the counts")
    return said


def built_before(doc: dict, stale: list[list[str]]) -> list[str]:
    """The files listed that `record` found modified after the object counted on them
    was built (formats/tool_output/counts.py: built_before), said again here."""
    listed = {entry["file"] for entry in doc["files"]}
    return stale_sources([pair for pair in stale if pair[0] in listed])


def lines_past_end(doc: dict) -> list[str]:
    """Files with counted lines past their end: not the text the code was compiled from
    (jq's parser.c, generated from a parser.y that Debian's patch then shortened, counted
    lines 970-979 of a 969-line file), so their other lines may carry wrong counts too,
    which the listing showed without a word; cg_annotate warns of it."""
    said = []
    for entry in doc["files"]:
        past = [
            row["line"]
            for row in entry["lines"]
            if row["line"] and row["source"] is None and any(row["counts"])
        ]
        if entry.get("path") and past:
            lines = "1 counted line" if len(past) == 1 else f"{len(past)} counted lines"
            said.append(
                f"{entry['path']}: {lines} past its end (line {past[0]} and after): it is not "
                "the text the code was compiled from, so its lines may not match the counts"
            )
    return said


def _sha256(path: Path) -> str:
    import hashlib  # only for a file whose size or time moved: most listings hash none

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _file_entry(
    file: str,
    lines: dict[int, list[int]],
    counts: list[int],
    total: int,
    found: tuple[Path | None, list[str]],
    context: int | None,
) -> dict:
    source, text = found
    shown = shown_lines(sorted(lines), len(text), context)
    zero = [0] * len(counts)  # one list for every uncounted line: rows are only read
    rows = [_count_row(n, lines.get(n, zero) if n else zero, text) for n in shown]
    return _count_entry(file, source, counts, total, rows)


def _count_entry(
    file: str, source: Path | None, counts: list[int], total: int, rows: list[dict]
) -> dict:
    return {
        "file": file,
        "path": str(source) if source else None,
        "counts": counts,
        "share": counts[0] / total if total else 0.0,
        "lines": rows,
    }


def _no_source_entry(per_function: dict[str, list[int]], counts: list[int], total: int) -> dict:
    """Code without line information (no debug info): one row per function, by name."""
    rows = [
        {"line": 0, "function": name, "counts": per_function[name], "source": None}
        for name in sorted(per_function)
    ]
    return _count_entry(NO_SOURCE, None, counts, total, rows)


def _sum(rows: Iterable[list[int]], n: int) -> list[int]:
    total = [0] * n
    for row in rows:
        for i, c in enumerate(row):
            total[i] += c
    return total


def _count_row(number: int | None, counts: list[int], text: list[str]) -> dict:
    """One printed line; a row without a line number marks skipped lines."""
    if number is None:
        return {"line": None, "counts": [], "source": None}
    source = text[number - 1] if 0 < number <= len(text) else None
    if source is not None and "\t" in source:
        source = source.expandtabs(8)
    return {"line": number, "counts": counts, "source": source}


def shown_lines(counted: list[int], length: int, context: int | None) -> list[int | None]:
    """Line numbers to print, `context` lines around each counted one (None: the
    whole file); None marks a gap. Counted lines past the end come last."""
    if not length:
        return list(counted)
    if context is None:
        wanted = set(range(1, length + 1))
    else:
        wanted = set()
        for n in counted:
            wanted.update(range(max(1, n - context), min(length, n + context) + 1))
    wanted.update(n for n in counted)
    out: list[int | None] = []
    previous = 0
    for n in sorted(wanted):
        if n - previous > 1 and context is not None and 0 < n <= length:
            out.append(None)
        out.append(n)
        previous = n
    return out
