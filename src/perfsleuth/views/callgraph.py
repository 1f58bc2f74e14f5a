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
    exact: ExactCounts,
    pattern: str,
    derived: Callable[[str], CallGraphDoc],
    notes: list[str] | None = None,
) -> list[CallGraphDoc]:
    """callgraph() of a count run, from its counted calls as callgrind_annotate's
    --tree=both reads them: each caller with the inclusive cost of its calls into the
    function, each callee with that of the function's calls to it, beside [self]; the
    function's total is `top`'s (read from the stacks derived from the calls, jq's
    jq_next had 46.72% where `top` and callgrind say 46.89%). A function merged from
    recursion levels is read at its first level (_FirstLevels): with the levels merged,
    the calls of an outer level hold those of the inner ones again (mutual.c's free_list
    had callers worth 128% of the run). A function in a recursion without levels of its
    own is `derived(name)`'s. `notes` gets a sentence for each function read at its
    first level."""
    names = [fn for _ob, fn in exact.functions]
    graph = _CallArcs(exact, names)
    levels = _FirstLevels(exact, graph) if exact.first_levels is not None else None
    docs = []
    for name in match_names(set(names), pattern):
        if not graph.recursive(name):
            docs.append(graph.neighbours(name))
        elif levels is not None and levels.merged(name):
            docs.append(levels.neighbours(name))
            if notes is not None:
                notes.append(levels.note(name))
        else:
            docs.append(derived(name))
    return docs


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

    def neighbours(self, function: str, own: set[int] | None = None) -> CallGraphDoc:
        """The function's callers and callees; `own`: its ids, if not all of its name's."""
        own = self.ids[function] if own is None else own
        names, exact = self.names, self.exact
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


class _FirstLevels:
    """A count run's functions merged from recursion levels, read at their first level
    (callgrind's f, not f'2), whose inclusive cost is `top`'s total: the callers of the
    calls into it, its calls (to its deeper levels, named f, too) and its own count, so
    that each side sums to the total with no level counted twice. tcc's parser recurses
    through unary, expr_cond, block and decl0, entered from many places: read from the
    stacks derived from the calls, unary had 11.49% where `top` and callgrind say 22.52%."""

    def __init__(self, exact: ExactCounts, graph: _CallArcs) -> None:
        from ..model.counts import RECURSION_SUFFIX

        assert exact.first_levels is not None
        self.split, self.levels = exact.first_levels
        self.exact = exact
        self.graph = graph
        names = [RECURSION_SUFFIX.sub("", fn) for _ob, fn in self.split.functions]
        self.split_graph = _CallArcs(self.split, names)

    def merged(self, function: str) -> bool:
        return any(fid in self.levels for fid in self.graph.ids[function])

    def neighbours(self, function: str) -> CallGraphDoc:
        doc = self.split_graph.neighbours(function, self._own(function))
        self_by_id = self.exact.self_by_id(self.graph.event)
        merged_self = sum(self_by_id[fid] for fid in self.graph.ids[function])
        doc["self"] = merged_self / self.exact.total(self.graph.event)
        return doc

    def _own(self, function: str) -> set[int]:
        """The function's first levels in the split counts, one an object."""
        own = set()
        for fid in self.graph.ids[function]:
            level = self.levels.get(fid)
            if level is None:  # another object's function of that name, not merged
                level = self.split.function_id(*self.exact.functions[fid])
            if level is not None:
                own.add(level)
        return own

    def note(self, function: str) -> str:
        """What the rows of a function read at its first level are, and where its deeper
        levels went."""
        own = self._own(function)
        self_by_id = self.split.self_by_id(self.graph.event)
        first = sum(self_by_id[fid] for fid in own)
        deeper = sorted(
            (fn, self_by_id[fid])
            for fid in self.split_graph.ids[function] - own
            for _ob, fn in [self.split.functions[fid]]
        )
        named = ", ".join(f"{fn} ({count:,} {self.graph.event} self)" for fn, count in deeper)
        return (
            f"{function} recurses: its callers and callees are those of its first level "
            f"(callgrind's {function}, whose [self] is {first:,} {self.graph.event}); "
            f"its deeper levels, {named}, are in the calls"
        )
