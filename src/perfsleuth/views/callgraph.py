"""Callers and callees of a function, with percentages, like pprof's peek."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:  # types alone: `annotate` of a count run matches names without them
    from ..model.profile import Profile
    from .documents import CallGraphDoc, Neighbour

ROOT = "[root]"
SELF = "[self]"
MAX_MATCHES = 20


def match_functions(profile: Profile, pattern: str) -> list[str]:
    """Exact name first; else every function whose name the pattern (a regex) finds."""
    return match_names({f.function for f in profile.frames}, pattern)


def match_names(names: set[str], pattern: str) -> list[str]:
    """Of `names`: `pattern` itself, else every name the pattern (a regex) finds."""
    if pattern in names:
        return [pattern]
    try:
        rx = re.compile(pattern)
    except re.error:
        rx = re.compile(re.escape(pattern))
    found = sorted(n for n in names if rx.search(n))
    if not found:
        raise UserError(f"no function matching {pattern!r} in this run; see `perfsleuth top`")
    if len(found) > MAX_MATCHES:
        raise UserError(
            f"{len(found)} functions match {pattern!r} (e.g. {', '.join(found[:5])}); "
            "give a more precise name or a regex like '^name$'"
        )
    return found


def neighbours(profile: Profile, function: str) -> CallGraphDoc:
    """Self/total of FUNCTION and the weight of each caller and callee."""
    frames = profile.frames
    total = profile.total
    self_w = total_w = 0.0
    callers: dict[str, float] = defaultdict(float)
    callees: dict[str, float] = defaultdict(float)
    for sid, weight in zip(profile.sample_stack, profile.sample_weight, strict=True):
        stack = profile.stacks[sid]
        hits = [i for i, f in enumerate(stack) if frames[f].function == function]
        if not hits:
            continue
        total_w += weight
        if hits[0] == 0:
            self_w += weight
        up = {frames[stack[i + 1]].function if i + 1 < len(stack) else ROOT for i in hits}
        down = {frames[stack[i - 1]].function if i > 0 else SELF for i in hits}
        for name in up - {function}:
            callers[name] += weight
        for name in down - {function}:
            callees[name] += weight

    def rows(weights: dict[str, float]) -> list[Neighbour]:
        ordered = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
        return [
            {
                "function": name,
                "total": w / total if total else 0.0,
                "share": w / total_w if total_w else 0.0,
            }
            for name, w in ordered
        ]

    return {
        "function": function,
        "self": self_w / total if total else 0.0,
        "total": total_w / total if total else 0.0,
        "callers": rows(callers),
        "callees": rows(callees),
    }


def callgraph(profile: Profile, pattern: str) -> list[CallGraphDoc]:
    return [neighbours(profile, name) for name in match_functions(profile, pattern)]
