"""Source files with their cost per line, for the web UI's source and annotate pages.

A file is shown only if the run's debug info names it and it resolves — after
following every symlink — to a regular file inside one of the source roots
(views.annotate.find_source): the --src folders, and the working directory of a run
of the user's own command (collect.run_facts.working_root), never of an import. A run
of the user's own command may also show a file at the absolute path its debug info
names (`as_named`: the user's own binaries name the user's own files, as pprof reads
them), so a library's source outside the working directory needs no restart with --src.
`source_roots` is that rule, for the CLI and the server alike.

The annotate document of a function (`function_document`: each file it has lines in,
whole) is the one the web UI shows and the CLI prints; `perfsleuth annotate` shows a
window of it (`window`: the function's lines, CONTEXT_LINES around them).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..collect.run_facts import working_root
from ..model.profile import Profile
from ..model.run import RunInfo
from ..model.source_lines import source_lines
from .annotate import CONTEXT_LINES, find_source, line_costs
from .callgraph import match_functions
from .documents import AnnotateDoc, SourceFile, SourceLine

MAX_SOURCE_BYTES = 4 * 1024 * 1024

LineCosts = dict[int, list[float]]  # line -> [self, total] weight


def source_roots(given: list[Path], info: RunInfo) -> list[Path]:
    """The --src folders, then the working directory of a run of the user's own command
    (run_facts.working_root); an imported run has no root unless --src names one."""
    own = working_root(info)
    return [*given, own] if own else list(given)


def named_files(profile: Profile) -> set[str]:
    return {f.file for f in profile.frames if f.file}


def root_of(path: Path, roots: list[Path]) -> Path | None:
    """The source root that serves PATH; None for a file read where the run's debug info
    names it (views.annotate.find_source with as_named)."""
    return next((r for r in roots if path.is_relative_to(r.resolve())), None)


def read_lines(path: Path) -> list[str]:
    with path.open("rb") as fh:
        data = fh.read(MAX_SOURCE_BYTES)
    return source_lines(data.decode("utf-8", errors="replace"))


def file_line_costs(profile: Profile, file: str) -> LineCosts:
    """line -> [self, total] weight of every frame at that line of FILE."""
    frames = profile.frames
    wanted = {fid for fid, f in enumerate(frames) if f.file == file}
    costs: LineCosts = defaultdict(lambda: [0.0, 0.0])
    for sid, weight in zip(profile.sample_stack, profile.sample_weight, strict=True):
        stack = profile.stacks[sid]
        lines = {frames[fid].line for fid in stack if fid in wanted}
        if not lines:
            continue
        if stack[0] in wanted:
            costs[frames[stack[0]].line][0] += weight
        for line in lines:
            costs[line][1] += weight
    return costs


def source_file(
    file: str, costs: LineCosts, total: float, roots: list[Path], as_named: bool = False
) -> SourceFile:
    """A whole file with each line's self and total share of the run (`total`); only
    the lines with a cost, without text, when the file is under no root. Cost at no
    line of the file (line 0) comes first, costed lines past its end (it changed since
    the run) last."""
    path = find_source(file, roots, as_named)
    text = read_lines(path) if path else []
    numbers = [
        *sorted(n for n in costs if n <= 0),
        *range(1, len(text) + 1),
        *sorted(n for n in costs if n > len(text)),
    ]
    lines: list[SourceLine] = []
    for n in numbers:
        cost = costs.get(n, (0.0, 0.0))
        lines.append(
            {
                "line": n,
                "self": cost[0] / total,
                "total": cost[1] / total,
                "source": text[n - 1] if 0 < n <= len(text) else "",
            }
        )
    return {
        "file": file,
        "found": path is not None,
        "path": str(path) if path else None,
        "root": str(root) if path and (root := root_of(path, roots)) else None,
        "self": sum(c[0] for c in costs.values()) / total,
        "total": max((c[1] for c in costs.values()), default=0.0) / total,
        "lines": lines,
    }


def file_document(
    profile: Profile, file: str, roots: list[Path], as_named: bool = False
) -> SourceFile:
    """The source page of a file: every frame at each of its lines."""
    costs = file_line_costs(profile, file)
    return source_file(file, costs, profile.total or 1.0, roots, as_named)


def function_document(
    profile: Profile, function: str, roots: list[Path], as_named: bool = False
) -> AnnotateDoc:
    """The annotate page of a function: each file it has lines in, whole, with the
    function's own weight per line."""
    by_file: dict[str, LineCosts] = {}
    for (file, line), cost in line_costs(profile, function).items():
        by_file.setdefault(file, {})[line] = cost
    total = profile.total or 1.0
    files = [
        source_file(file, lines, total, roots, as_named) for file, lines in sorted(by_file.items())
    ]
    return {"function": function, "files": files}


def annotate(
    profile: Profile, pattern: str, roots: list[Path], as_named: bool = False
) -> list[AnnotateDoc]:
    """`perfsleuth annotate PATTERN`: the window of the annotate document of every
    function the pattern matches."""
    return [
        window(function_document(profile, function, roots, as_named))
        for function in match_functions(profile, pattern)
    ]


def window(doc: AnnotateDoc, context: int = CONTEXT_LINES) -> AnnotateDoc:
    """The document with, of each file, the function's lines from its first to its last
    costed line and `context` lines around them (the lines at no line first)."""
    files: list[SourceFile] = []
    for file in doc["files"]:
        costed = [row["line"] for row in file["lines"] if row["self"] or row["total"]]
        shown = set(function_lines(costed, context))
        files.append({**file, "lines": [row for row in file["lines"] if row["line"] in shown]})
    return {**doc, "files": files}


def function_lines(costed: list[int], context: int) -> list[int]:
    """A function's lines to print: its body from the first to the last costed line,
    `context` lines around it, and lines without a number (0) first."""
    known = sorted(n for n in costed if n > 0)
    shown = {n for n in costed if n <= 0}
    for n in known:
        shown.update(range(max(1, n - context), n + context + 1))
    if known:
        shown.update(range(known[0], known[-1] + 1))
    return sorted(shown)
