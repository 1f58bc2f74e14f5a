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
    jq_next had 46.72% where `top` and callgrind say 46.89%).

    A function in a recursion, its levels merged, is read from its first level's calls
    (callgrind's f, not f'2: the outermost calls, each counted once), [self] being that
    level's own count; merged, the calls of an outer level hold those of the inner ones
    again (mutual.c's free_list had callers worth 128% of the run). A function of one
    level in a recursion that goes through it merged (gawk's sort_user_func, the comparator
    its sort calls, which runs r_interpret'2) is read from its calls with the levels apart:
    callgrind gives a function a second level whenever it is entered while running, so
    one of one level never held its own calls, even where its calls lead back to it
    through another's deeper level (mujs's sortcmp, through js_call'2 and its sort
    builtin). Without its levels apart it is `derived(name)`'s."""
    names = [fn for _ob, fn in exact.functions]
    graph = _CallArcs(exact, names)
    first = _FirstLevels.of(exact, graph.event)
    docs = []
    for name in match_names(set(names), pattern):
        if not graph.recursive(name):
            docs.append(graph.neighbours(name))
        elif first is not None and graph.ids[name] <= first.levels.keys():
            docs.append(first.neighbours(name, graph))
        elif first is not None and (
            not graph.ids[name] & first.levels.keys() or not first.graph.recursive(name)
        ):
            docs.append(first.graph.neighbours(name))
        else:
            docs.append(derived(name))
    return docs


def _around(
    arcs: list[tuple[int, int, int]], names: list[str], own: set[int]
) -> tuple[dict[str, float], dict[str, float]]:
    """The callers' and callees' costs of the calls into and out of the ids `own`."""
    callers: dict[str, float] = defaultdict(float)
    callees: dict[str, float] = defaultdict(float)
    for caller, callee, cost in arcs:
        if callee in own:
            callers[names[caller]] += cost
        elif caller in own:
            callees[names[callee]] += cost
    return callers, callees


class _CallArcs:
    """A count run's calls by function id, in the event `top` shows."""

    def __init__(self, exact: ExactCounts, names: list[str], event: str = "") -> None:
        self.exact = exact
        self.names = names
        self.event = event or ("Ir" if "Ir" in exact.events else exact.events[0])
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
        self.callers_of: dict[int, set[int]] = defaultdict(set)
        for caller, callee, _cost in self.arcs:
            self.called[caller].add(callee)
            self.callers_of[callee].add(caller)
        self.ids: dict[str, set[int]] = defaultdict(set)  # a name's ids, one per object
        for fid, name in enumerate(names):
            self.ids[name].add(fid)

    def recursive(self, function: str) -> bool:
        """Whether the function's calls lead back to it."""
        own = self.ids[function]
        return any(callee in own for fid in own for callee in self.called[fid]) or bool(
            self.leading_back(own)
        )

    def leading_back(self, own: set[int]) -> set[int]:
        """The callees of the ids `own` (not themselves) whose calls lead back to them."""
        callers_of = self.callers_of
        reach_own: set[int] = set()
        todo = [caller for fid in own for caller in callers_of[fid]]
        while todo:
            fid = todo.pop()
            if fid not in reach_own and fid not in own:
                reach_own.add(fid)
                todo.extend(callers_of[fid])
        return {callee for fid in own for callee in self.called[fid] if callee in reach_own}

    def neighbours(self, function: str) -> CallGraphDoc:
        own, exact = self.ids[function], self.exact
        callers, callees = _around(self.arcs, self.names, own)
        self_by_id = exact.self_by_id(self.event)
        self_w = sum(self_by_id[fid] for fid in own)
        if self_w:
            callees[SELF] = self_w
        total = exact.total(self.event)
        total_w = min(self_w + sum(w for name, w in callees.items() if name != SELF), total)
        return _document(function, self_w, total_w, total, callers, callees)


class _FirstLevels:
    """The calls of a count run with its recursion levels apart (callgrind's f, f'2),
    each level named by its function."""

    def __init__(self, split: ExactCounts, levels: dict[int, int], inclusive: dict[int, int]):
        from ..model.counts import merged_name  # loaded with the counts it reads

        self.levels = levels  # merged id -> its first level's id in split
        self.graph = _CallArcs(split, [merged_name(fn) for _ob, fn in split.functions])
        self.inclusive = inclusive  # merged id -> its first level's inclusive cost

    @classmethod
    def of(cls, exact: ExactCounts, event: str) -> _FirstLevels | None:
        if exact.first_levels is None:
            return None
        split, levels = exact.first_levels
        return cls(split, levels, exact.first_level_inclusive(event))

    def neighbours(self, function: str, merged: _CallArcs) -> CallGraphDoc:
        """FUNCTION's callers: its first level's. Its callees: [self] (every level's),
        each callee whose calls never lead back to it (from every level: those calls
        hold no level of it, so they are apart), and what the total leaves to the callees
        through which it recurses; with several of them, each has its first level's
        calls, which hold the deeper levels again (sqlite3VdbeExec's five, through
        sqlite3RunVacuum, sqlite3_exec...)."""
        own, names = merged.ids[function], merged.names
        first = {self.levels[fid] for fid in own}
        callers, _ = _around(self.graph.arcs, self.graph.names, first)
        returning = merged.leading_back(own)
        callees: dict[str, float] = defaultdict(float)
        for caller, callee, cost in merged.arcs:
            if caller in own and callee not in own and callee not in returning:
                callees[names[callee]] += cost
        total = merged.exact.total(merged.event)
        merged_self = merged.exact.self_by_id(merged.event)
        self_w = sum(merged_self[fid] for fid in own)
        total_w = min(sum(self.inclusive[fid] for fid in own), total)
        rest = total_w - self_w - sum(callees.values())
        through = {names[fid] for fid in returning}
        if len(through) == 1:
            callees[through.pop()] = rest
        else:
            for caller, callee, cost in self.graph.arcs:
                if caller in first and self.graph.names[callee] in through:
                    callees[self.graph.names[callee]] += cost
        if self_w:
            callees[SELF] = self_w
        return _document(function, self_w, total_w, total, callers, callees)
