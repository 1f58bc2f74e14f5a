"""callgrind.out and cachegrind.out text formats.

Both carry exact event counts (Ir, cache misses, ...) per source line. Callgrind
adds a call graph: for each call site, the inclusive cost of the calls made there.
A Profile needs stacks, so `read` derives them from the call graph:

* every (function, file, line) self cost becomes the leaf of one or more samples,
  so self cost per line and per function is exact;
* the caller chain above a function is spread over its callers in proportion to
  the inclusive cost of their calls into it, then recursively over their callers.
  On an acyclic call graph this makes every function's inclusive cost (the weight
  of the samples whose stack holds it) equal callgrind's inclusive cost. The
  approximation is in the paths: a deep chain A->B->C gets C's cost split by B's
  overall caller mix, not by what A's calls into B actually spent in C.
* recursion (a caller already on the chain) ends the chain there, and a function
  with more than MAX_CHAINS distinct caller chains keeps its heaviest ones and
  ends the others at itself; both make ancestors' inclusive cost a lower bound.

Functions are identified by (object, name): same-named static functions of one
object are merged into one node, as a name-keyed view would show them.
Cachegrind has no calls: its stacks have one frame. `line_costs` and
`instr_costs` give the exact counts of every event, without any stack derivation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from perfsleuth.errors import UserError
from perfsleuth.profile import Frame, Profile, ProfileBuilder

MAX_CHAINS = 512
MAX_DEPTH = 256
# Headers kept in Profile.meta; the others (desc:, event:, version:, ...) are not needed.
META_KEYS = ("cmd", "pid", "creator", "thread")
# Name compression: which tables the name-carrying keys share.
NAME_KINDS = {
    "fl": "file",
    "fi": "file",
    "fe": "file",
    "cfi": "file",
    "cfl": "file",
    "jfi": "file",
    "fn": "fn",
    "cfn": "fn",
    "jfn": "fn",
    "ob": "ob",
    "cob": "ob",
}
# Event names as perfsleuth units; other events are "events".
EVENT_UNITS = {"Ir": "instructions"}

Fn = tuple[str, str]  # (object, function name)
Site = tuple[str, int]  # (file, line)


def sniff(head: bytes) -> bool:
    """A callgrind/cachegrind out file: an `events:` header and callgrind-style keys."""
    lines = head.decode("latin-1").splitlines()
    has_events = any(ln.startswith("events:") for ln in lines)
    keys = ("# callgrind format", "positions:", "creator:", "cmd:", "desc:", "fn=", "fl=")
    return has_events and any(ln.startswith(keys) for ln in lines)


@dataclass
class CallgrindData:
    """Everything an out file says, exactly, keyed by function."""

    events: list[str] = field(default_factory=list)
    positions: list[str] = field(default_factory=lambda: ["line"])
    # self cost per function and (file, line)
    self_costs: dict[Fn, dict[Site, list[int]]] = field(default_factory=dict)
    # inclusive cost of calls: callee -> (caller, call-site file, call-site line) -> cost
    calls: dict[Fn, dict[tuple[Fn, str, int], list[int]]] = field(default_factory=dict)
    # per instruction address: (object, function, address) -> cost
    instr: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)
    totals: list[int] = field(default_factory=list)
    meta: dict = field(default_factory=dict)


def parse(path: str | Path) -> CallgrindData:
    path = Path(path)
    parser = _Parser(path.name)
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            parser.line_number = number
            parser.feed(line.rstrip("\n"))
    return parser.finish()


class _Parser:
    def __init__(self, name: str) -> None:
        self.name = name
        self.line_number = 0
        self.data = CallgrindData()
        self.names: dict[tuple[str, str], str] = {}
        self.ob = self.file = self.fn_name = ""
        self.fn: Fn = ("", "")
        self.call: tuple[Fn, int] | None = None  # callee, call count of the next cost line
        self.cob: str | None = None
        self.prev: list[int] = [0]

    def fail(self, what: str) -> NoReturn:
        raise UserError(f"{self.name}:{self.line_number}: {what}; the file is corrupt")

    def feed(self, line: str) -> None:
        if not line or line[0] == "#":
            return
        c = line[0]
        if c.isdigit() or c in "+-*":
            self.cost_line(line.split())
            return
        key, sep, value = line.partition("=")
        if sep and key in NAME_KINDS:
            self.name_line(key, self.decompress(NAME_KINDS[key], value))
        elif sep and key == "calls":
            self.calls_line(value)
        elif not (sep and key in ("jump", "jcnd")):
            self.header_line(line)

    def decompress(self, kind: str, value: str) -> str:
        if not value.startswith("("):
            return value
        close = value.find(")")
        ident = value[1:close]
        if close < 0 or not ident.isdigit():
            return value
        name = value[close + 1 :].strip()
        if name:
            self.names[kind, ident] = name
            return name
        known = self.names.get((kind, ident))
        if known is None:
            self.fail(f"{kind} name ({ident}) is used before it is defined")
        return known

    def name_line(self, key: str, name: str) -> None:
        if key == "ob":
            self.ob = name
        elif key in ("fl", "fi", "fe"):
            self.file = name
        elif key == "fn":
            self.fn = (self.ob, name)
        elif key == "cob":
            self.cob = name
        elif key == "cfn":
            self.call = ((self.ob if self.cob is None else self.cob, name), 0)

    def calls_line(self, value: str) -> None:
        if self.call is None:
            self.fail("calls= without a cfn= before it")
        try:
            count = int(value.split()[0])
        except (ValueError, IndexError):
            self.fail(f"bad call count {value!r}")
        self.call = (self.call[0], count)

    def header_line(self, line: str) -> None:
        key, sep, value = line.partition(":")
        value = value.strip()
        if not sep:
            self.fail(f"unexpected line {line[:60]!r}")
        if key == "events":
            self.data.events = value.split()
        elif key == "positions":
            self.data.positions = value.split()
            self.prev = [0] * len(self.data.positions)
        elif key in ("summary", "totals"):
            # totals: is the sum of the file's costs; summary: may count a little more
            if key == "totals" or not self.data.totals:
                self.data.totals = self.numbers(value.split())
        elif key in META_KEYS:
            self.data.meta.setdefault(key, value)

    def numbers(self, tokens: list[str]) -> list[int]:
        try:
            return [int(t) for t in tokens]
        except ValueError:
            self.fail(f"expected event counts, got {' '.join(tokens)[:60]!r}")

    def cost_line(self, tokens: list[str]) -> None:
        if not self.data.events:
            self.fail("cost line before the events: header")
        n = len(self.prev)
        if len(tokens) < n:
            self.fail("cost line with fewer positions than positions: names")
        for i in range(n):
            self.prev[i] = self.subposition(tokens[i], self.prev[i])
        costs = self.numbers(tokens[n:])
        if len(costs) > len(self.data.events):
            self.fail(f"{len(costs)} costs for {len(self.data.events)} events")
        costs += [0] * (len(self.data.events) - len(costs))
        if self.call is not None and self.call[1]:
            self.add_call(costs)
        elif any(costs):
            self.add_self(costs)

    def subposition(self, token: str, prev: int) -> int:
        try:
            if token[0] == "+":
                return prev + int(token[1:])
            if token[0] == "-":
                return prev - int(token[1:])
            if token == "*":
                return prev
            return int(token, 16) if token.startswith("0x") else int(token)
        except ValueError:
            self.fail(f"bad position {token!r}")

    def line(self) -> int:
        positions = self.data.positions
        return self.prev[positions.index("line")] if "line" in positions else 0

    def add_self(self, costs: list[int]) -> None:
        by_site = self.data.self_costs.setdefault(self.fn, {})
        _add(by_site, (self.file, self.line()), costs)
        if "instr" in self.data.positions:
            address = self.prev[self.data.positions.index("instr")]
            _add(self.data.instr, (self.fn[0], self.fn[1], address), costs)

    def add_call(self, costs: list[int]) -> None:
        assert self.call is not None
        callee = self.call[0]
        _add(self.data.calls.setdefault(callee, {}), (self.fn, self.file, self.line()), costs)
        self.call = None
        self.cob = None

    def finish(self) -> CallgrindData:
        data = self.data
        if not data.events:
            raise UserError(
                f"{self.name}: no events: header; pass a callgrind.out or cachegrind.out file"
            )
        if not data.totals:
            data.totals = _sum_costs(data.self_costs, len(data.events))
        return data


def _add(table: dict, key: object, costs: list[int]) -> None:
    old = table.get(key)
    if old is None:
        table[key] = list(costs)
    else:
        for i, c in enumerate(costs):
            old[i] += c


def _sum_costs(self_costs: dict[Fn, dict[Site, list[int]]], n: int) -> list[int]:
    total = [0] * n
    for sites in self_costs.values():
        for costs in sites.values():
            for i, c in enumerate(costs):
                total[i] += c
    return total


def line_costs(path: str | Path) -> dict[tuple[str, str, int], dict[str, int]]:
    """Exact cost of every event per (file, function, line)."""
    data = parse(path)
    out: dict[tuple[str, str, int], dict[str, int]] = {}
    for (_ob, fn), sites in data.self_costs.items():
        for (file, line), costs in sites.items():
            row = out.setdefault((file, fn, line), dict.fromkeys(data.events, 0))
            for event, c in zip(data.events, costs, strict=True):
                row[event] += c
    return out


def instr_costs(path: str | Path) -> dict[tuple[str, str, int], dict[str, int]]:
    """Exact cost of every event per (object, function, instruction address).

    Empty unless the file was written with `--dump-instr=yes`.
    """
    data = parse(path)
    return {key: dict(zip(data.events, costs, strict=True)) for key, costs in data.instr.items()}


def read(path: str | Path, event: str = "Ir") -> Profile:
    """A Profile weighted by `event` (the first event if the file has no `event`)."""
    data = parse(path)
    index = data.events.index(event) if event in data.events else 0
    primary = data.events[index]
    builder = ProfileBuilder(unit=EVENT_UNITS.get(primary, "events"), meta=_meta(data, primary))
    chains = _Chains(data, index, builder)
    for fn, sites in data.self_costs.items():
        ups = chains.up(fn)
        for (file, line), costs in sites.items():
            leaf = builder.frame_id(Frame(fn[1], dso=fn[0], file=file, line=line))
            _add_split(builder, leaf, costs[index], ups)
    return builder.build()


def _meta(data: CallgrindData, primary: str) -> dict:
    creator = data.meta.get("creator", "")
    lines = [
        [file, fn, line, costs]
        for (_ob, fn), sites in data.self_costs.items()
        for (file, line), costs in sites.items()
    ]
    meta = {
        "format": "callgrind" if data.calls or "callgrind" in creator else "cachegrind",
        "events": list(data.events),
        "primary_event": primary,
        "event_totals": dict(zip(data.events, data.totals, strict=False)),
        "event_lines": lines,
    }
    meta.update(data.meta)
    return meta


def _add_split(
    builder: ProfileBuilder,
    leaf: int,
    weight: int,
    ups: list[tuple[tuple[int, ...], float]],
) -> None:
    """Spread `weight` over the caller chains; the last one takes the rounding rest."""
    if weight == 0:
        return
    rest = float(weight)
    for i, (chain, fraction) in enumerate(ups):
        part = rest if i == len(ups) - 1 else weight * fraction
        rest -= part
        builder.add_ids((leaf, *chain), part)


class _Chains:
    """Caller chains of each function with the fraction of its cost each one gets."""

    def __init__(self, data: CallgrindData, index: int, builder: ProfileBuilder) -> None:
        self.data = data
        self.index = index
        self.builder = builder
        self.memo: dict[Fn, list[tuple[tuple[int, ...], float]]] = {}
        self.active: set[Fn] = set()
        self.out = self._outgoing()

    def _outgoing(self) -> dict[Fn, int]:
        out: dict[Fn, int] = defaultdict(int)
        for callee, sites in self.data.calls.items():
            for (caller, _file, _line), costs in sites.items():
                if caller != callee:
                    out[caller] += costs[self.index]
        return out

    def _inclusive(self, fn: Fn, incoming: int) -> int:
        own = sum(c[self.index] for c in self.data.self_costs.get(fn, {}).values())
        return max(incoming, own + self.out.get(fn, 0))

    def up(self, fn: Fn) -> list[tuple[tuple[int, ...], float]]:
        found = self.memo.get(fn)
        if found is None:
            self.active.add(fn)
            found = self.memo[fn] = self._compute(fn)
            self.active.discard(fn)
        return found

    def _compute(self, fn: Fn) -> list[tuple[tuple[int, ...], float]]:
        callers = {
            key: costs[self.index]
            for key, costs in self.data.calls.get(fn, {}).items()
            if key[0] not in self.active and costs[self.index] > 0
        }
        total = self._inclusive(fn, sum(callers.values()))
        if not callers or len(self.active) > MAX_DEPTH or total <= 0:
            return [((), 1.0)]
        result: dict[tuple[int, ...], float] = defaultdict(float)
        for (caller, file, line), cost in callers.items():
            frame = self.builder.frame_id(Frame(caller[1], dso=caller[0], file=file, line=line))
            for chain, fraction in self.up(caller):
                result[(frame, *chain)] += cost / total * fraction
        return _limit(result)


def _limit(chains: dict[tuple[int, ...], float]) -> list[tuple[tuple[int, ...], float]]:
    """At most MAX_CHAINS chains, heaviest first; what is left ends at the function itself."""
    ranked = sorted(chains.items(), key=lambda item: -item[1])[: MAX_CHAINS - 1]
    rest = 1.0 - sum(fraction for _chain, fraction in ranked)
    if rest > 1e-12:
        ranked.append(((), rest))
    return ranked
