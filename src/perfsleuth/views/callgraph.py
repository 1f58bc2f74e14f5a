"""Callers and callees of a function, with percentages, like pprof's peek."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:  # types alone: `annotate` of a count run matches names without them
    from ..model.counts import ExactCounts
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

    return _document(function, self_w, total_w, total, callers, callees)


def _document(
    function: str,
    self_w: float,
    total_w: float,
    total: float,
    callers: dict[str, float],
    callees: dict[str, float],
) -> CallGraphDoc:
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


def exact_callgraph(
    exact: ExactCounts, pattern: str, derived: Callable[[str], CallGraphDoc]
) -> list[CallGraphDoc]:
    """callgraph() of a count run, from its counted calls as callgrind_annotate's
    --tree=both reads them: each caller with the inclusive cost of its calls into the
    function, each callee with that of the function's calls to it, beside [self]; the
    function's total is `top`'s (read from the stacks derived from the calls, jq's
    jq_next had 46.72% where `top` and callgrind say 46.89%). A function in a recursion
    is `derived(name)`'s: with its levels merged, the calls of an outer level hold those
    of the inner ones again (mutual.c's free_list had callers worth 128% of the run)."""
    names = [fn for _ob, fn in exact.functions]
    graph = _CallArcs(exact, names)
    return [
        derived(name) if graph.recursive(name) else graph.neighbours(name)
        for name in match_names(set(names), pattern)
    ]


class _CallArcs:
    """A count run's calls by function id, in the event `top` shows."""

    def __init__(self, exact: ExactCounts, names: list[str]) -> None:
        self.exact = exact
        self.names = names
        self.event = "Ir" if "Ir" in exact.events else exact.events[0]
        calls = exact.calls
        self.arcs = list(
            zip(
                calls.column("caller"),
                calls.column("callee"),
                calls.event(exact.index(self.event)),
                strict=True,
            )
        )
        self.called: dict[int, set[int]] = defaultdict(set)
        for caller, callee, _cost in self.arcs:
            self.called[caller].add(callee)
        self.ids: dict[str, set[int]] = defaultdict(set)  # a name's ids, one per object
        for fid, name in enumerate(names):
            self.ids[name].add(fid)

    def recursive(self, function: str) -> bool:
        """Whether the function's calls lead back to it."""
        own = self.ids[function]
        seen: set[int] = set()
        todo = [callee for fid in own for callee in self.called[fid]]
        while todo:
            fid = todo.pop()
            if fid in own:
                return True
            if fid not in seen:
                seen.add(fid)
                todo.extend(self.called[fid])
        return False

    def neighbours(self, function: str) -> CallGraphDoc:
        own, names, exact = self.ids[function], self.names, self.exact
        callers: dict[str, float] = defaultdict(float)
        callees: dict[str, float] = defaultdict(float)
        for caller, callee, cost in self.arcs:
            if callee in own:
                callers[names[caller]] += cost
            elif caller in own:
                callees[names[callee]] += cost
        self_by_id = exact.self_by_id(self.event)
        self_w = sum(self_by_id[fid] for fid in own)
        if self_w:
            callees[SELF] = self_w
        total = exact.total(self.event)
        total_w = min(self_w + sum(w for name, w in callees.items() if name != SELF), total)
        return _document(function, self_w, total_w, total, callers, callees)
