"""How frames group for `--by function|line|file|dso`, and what fleet top groups by."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UserError
from ..model import labels
from ..model.labels import LABEL_GROUPINGS, LABEL_PREFIX

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:  # types alone: `diff` and `top` take GROUPINGS without the profile's module
    from ..model.profile import Frame, Profile

GROUPINGS = ("function", "line", "file", "dso")
# fleet top's: the frame groupings, DSOs by library name, and a label's values
FLEET_TOP_GROUPINGS = (*GROUPINGS, "library", *LABEL_GROUPINGS)


def top_name(by: str) -> str:
    """The name of the kept TopN page by `by` (views/run_answers.py keeps it)."""
    return f"top-{by}"


def grouped_label(by: str) -> str | None:
    """The label a fleet TopN `--by` breaks the time down by: service, host or any label
    named as label:NAME (a stored column such as exe, or a push's own, such as version)."""
    if by in LABEL_GROUPINGS:
        return by
    name = by.removeprefix(LABEL_PREFIX)
    return name if by.startswith(LABEL_PREFIX) and labels.LABEL_NAME.fullmatch(name) else None


def fleet_top_grouping(by: str) -> str:
    """`by` when fleet top can group by it, else a UserError that lists the choices."""
    if by in FLEET_TOP_GROUPINGS or grouped_label(by):
        return by
    named = ", ".join(FLEET_TOP_GROUPINGS)
    raise UserError(f"bad --by {by!r}: use one of {named}, or {LABEL_PREFIX}NAME for any label")


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
