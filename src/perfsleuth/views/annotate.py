"""Source lines of a function with their cost, read from the files debug info names."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..model.profile import Profile
from .callgraph import match_functions

CONTEXT_LINES = 3


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


def find_source(name: str, roots: list[Path]) -> Path | None:
    """The file debug info names, as is, or under one of the source roots."""
    if not name:
        return None
    path = Path(name)
    if path.is_absolute() and path.is_file():
        return path
    for root in roots:
        candidate = root / (path.relative_to(path.anchor) if path.is_absolute() else path)
        if candidate.is_file():
            return candidate
        by_name = root / path.name
        if by_name.is_file():
            return by_name
    return path if path.is_file() else None


def annotate(profile: Profile, pattern: str, roots: list[Path]) -> list[dict]:
    total = profile.total or 1.0
    out = []
    for function in match_functions(profile, pattern):
        by_file: dict[str, dict[int, list[float]]] = defaultdict(dict)
        for (file, line), cost in line_costs(profile, function).items():
            by_file[file][line] = cost
        for file, lines in sorted(by_file.items()):
            out.append(_file_entry(function, file, lines, total, roots))
    return out


def _file_entry(
    function: str, file: str, lines: dict[int, list[float]], total: float, roots: list[Path]
) -> dict:
    source = find_source(file, roots)
    text = source.read_text(errors="replace").splitlines() if source else []
    rows = []
    for number in _shown_lines(lines, len(text)):
        cost = lines.get(number, [0.0, 0.0])
        rows.append(
            {
                "line": number,
                "self": cost[0] / total,
                "total": cost[1] / total,
                "source": text[number - 1] if 0 < number <= len(text) else "",
            }
        )
    return {
        "function": function,
        "file": file,
        "path": str(source) if source else None,
        "self": sum(c[0] for c in lines.values()) / total,
        "total": max((c[1] for c in lines.values()), default=0.0) / total,
        "lines": rows,
    }


def _shown_lines(lines: dict[int, list[float]], length: int) -> list[int]:
    known = sorted(n for n in lines if n > 0)
    shown: set[int] = set(n for n in lines if n <= 0)
    if not length:
        return sorted(set(lines))
    for n in known:
        shown.update(range(max(1, n - CONTEXT_LINES), min(length, n + CONTEXT_LINES) + 1))
    if known:
        shown.update(range(known[0], known[-1] + 1))
    return sorted(shown)


def render(doc: dict, console: Console) -> None:
    for entry in doc["files"]:
        where = entry["path"] or f"{entry['file'] or '?'} (source not found; pass --src DIR)"
        console.print(
            f"[bold]{escape(entry['function'])}[/bold] — {escape(where)}  "
            f"self {100 * entry['self']:.2f}% of run {doc['run']}",
            highlight=False,
        )
        console.print(f"{'self':>7} {'total':>7}  {'line':>5}  source", style="bold")
        for row in entry["lines"]:
            s = f"{100 * row['self']:6.2f}%" if row["self"] else ""
            t = f"{100 * row['total']:6.2f}%" if row["total"] else ""
            line = str(row["line"]) if row["line"] > 0 else "?"
            style = "red" if row["self"] >= 0.05 else None
            console.print(
                f"{s:>7} {t:>7}  {line:>5}  {escape(row['source'])}",
                style=style,
                highlight=False,
                soft_wrap=True,
            )
        console.print()
