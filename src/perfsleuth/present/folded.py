"""FlameGraph folded stacks: one `root;caller;leaf weight` line per distinct stack.

Frames carry the `_[k]` (kernel) and `_[i]` (inlined) marks of stackcollapse-perf.pl
and inferno, which formats/folded.py reads back. Frames read from DTrace-style
`module`function` folded stacks get their module prefix back, so such files round-trip;
other runs' frames are written without it, as stackcollapse-perf.pl writes them.
Python frames are written as py-spy writes them, `function (file:line)`, so the file
reads back as py-spy's (formats/py_spy.py), module, file and line kept.
"""

from __future__ import annotations

from collections import defaultdict
from typing import IO, TYPE_CHECKING, Any

from . import PROFILE, Output, TitledProfile

if TYPE_CHECKING:  # types alone: the registry imports this module for every command's --format
    from ..model.profile import Frame, Profile


def lines(profile: Profile) -> list[str]:
    """Root first, threads merged, sorted; stacks without weight left out."""
    modules = bool(profile.meta.get("module_prefixes"))
    labels = [_label(f, modules).replace(";", ":") for f in profile.frames]
    totals: dict[str, float] = defaultdict(float)
    for stack, weight, _count, _thread, _state in profile.rows():
        if stack and weight:
            totals[";".join(labels[f] for f in reversed(stack))] += weight
    return [f"{stack} {_number(totals[stack])}" for stack in sorted(totals)]


def _label(frame: Frame, modules: bool) -> str:
    from ..model.profile import is_python_frame
    from ..views.flame import frame_label

    if is_python_frame(frame):
        return f"{frame.function} ({frame.file}:{frame.line})"
    label = frame_label(frame)
    return f"{frame.dso}`{label}" if modules and frame.dso else label


def _number(weight: float) -> str:
    return str(int(weight)) if weight == int(weight) else repr(weight)


def _write(doc: TitledProfile, fh: IO[Any]) -> None:
    fh.writelines(line + "\n" for line in lines(doc.profile))


OUTPUT = Output(
    name="folded",
    help="folded stacks for FlameGraph and inferno ('-' for stdout)",
    writers={PROFILE: _write},
)
