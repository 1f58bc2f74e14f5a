"""How frames group for `--by function|line|file|dso`."""

from __future__ import annotations

from collections.abc import Callable

from ..model.fleet import LABEL_GROUPINGS
from ..model.profile import Frame, Profile

GROUPINGS = ("function", "line", "file", "dso")
# fleet top's: the frame groupings, DSOs by library name, and a label's values
FLEET_TOP_GROUPINGS = (*GROUPINGS, "library", *LABEL_GROUPINGS)


def key_func(by: str) -> Callable[[Frame], tuple]:
    if by == "function":
        return lambda f: (f.function, f.dso)
    if by == "line":
        return lambda f: (f.function, f.dso, f.file, f.line)
    if by == "file":
        return lambda f: (f.file or f"[{f.dso or 'unknown'}]",)
    if by == "dso":
        return lambda f: (f.dso or "[unknown]",)
    raise ValueError(f"unknown grouping {by!r}")


def frame_keys(profile: Profile, by: str) -> tuple[list[int], list[tuple]]:
    """Per frame id, a small integer naming its group; and the groups' keys."""
    fn = key_func(by)
    ids: dict[tuple, int] = {}
    per_frame = []
    for frame in profile.frames:
        per_frame.append(ids.setdefault(fn(frame), len(ids)))
    return per_frame, list(ids)
