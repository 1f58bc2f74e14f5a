"""Source files for the web UI, served only when safe.

A file is shown only if the run's debug info names it and it resolves — after
following every symlink — to a regular file inside one of the source roots
(views.annotate.find_source): the --src folders, and the working directory of a run
of the user's own command (collect.run_facts.working_root), never of an import.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..model.profile import Profile

MAX_SOURCE_BYTES = 4 * 1024 * 1024


def named_files(profile: Profile) -> set[str]:
    return {f.file for f in profile.frames if f.file}


def root_of(path: Path, roots: list[Path]) -> Path:
    """The source root that serves PATH (one views.annotate.find_source found in roots)."""
    return next(r for r in roots if path.is_relative_to(r.resolve()))


def read_lines(path: Path) -> list[str]:
    with path.open("rb") as fh:
        data = fh.read(MAX_SOURCE_BYTES)
    return data.decode("utf-8", errors="replace").splitlines()


def file_line_costs(profile: Profile, file: str) -> dict[int, list[float]]:
    """line -> [self, total] weight of every frame at that line of FILE."""
    frames = profile.frames
    wanted = {fid for fid, f in enumerate(frames) if f.file == file}
    costs: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
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
