"""callgrind.out and cachegrind.out text formats.

Both carry exact event counts (Ir, cache misses, ...) per source line. Callgrind
adds a call graph: for each call site, the inclusive cost of the calls made there.
A Profile needs stacks, so `read` derives them from the call graph:

* every (function, file, line) self cost is the leaf of one or more samples, so
  self cost per line and per function is exact;
* the caller chain above a function is spread over its callers in proportion to
  the inclusive cost of their calls into it, then recursively over their callers.
  On an acyclic call graph this makes every function's inclusive cost (the weight
  of the samples whose stack holds it) equal callgrind's inclusive cost.
  The approximation is in the paths: a chain A->B->C gets C's cost split by B's
  overall caller mix, not by what A's calls into B actually spent in C.
* recursion: functions calling each other in a cycle are treated as one unit
  whose cost goes to the calls entering the cycle, in proportion to their cost.
  Callers outside the cycle keep their whole inclusive cost only when the cycle
  is entered from one place; members of the cycle show their self cost and, as
  direct callers, their callees' cost. (Callgrind's own inclusive cost of a
  recursive function counts the recursion more than once.)
* a function with more than MAX_CHAINS distinct caller chains keeps its heaviest
  chains; the others keep their outermost frames under a TRUNCATED frame, so
  outer callers such as main stay exact and those cut out lose that part.

Functions are identified by (object, name), but for two functions of one object that
share a name (static functions of two files): given their symbols' address ranges
(`apart`), each is named with its file, `peek_token (input.c)`, by the address of
each instruction, call site and call target.
Cachegrind has no calls: its stacks have one frame. `line_costs` and
`instr_costs` give the exact counts of every event, without any stack derivation.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.model.counts import (
    CALL_COLUMNS,
    CELL_COLUMNS,
    EVENT_UNITS,
    NO_SOURCE,
    RECURSION_SUFFIX,
    Columns,
    ExactCounts,
    merged_name,
)
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder

MAX_CHAINS = 512
Chain = tuple[int, ...]  # frame ids of the callers above a function, innermost first
# Stands for the callers left out of a chain cut short by MAX_CHAINS.
TRUNCATED = Frame("[callers truncated]")
# Headers kept in Profile.meta; the others (desc:, event:, version:, ...) are not needed.
META_KEYS = ("cmd", "pid", "creator", "thread")
VALGRIND_CREATORS = ("callgrind", "cachegrind")
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
# A file whose costs add up to less than this share of its summary:/totals: line was
# cut short (callgrind's summary: may count a few more than the costs it writes).
COMPLETE_SHARE = 0.99
# Source line numbers beyond this do not fit the run store's INTEGER column.
MAX_LINE_NUMBER = 2**31 - 1
# Event names as perfsleuth units; other events are "events".
Fn = tuple[str, str]  # (object, function name)
Site = tuple[str, int]  # (file, line)
# object -> function name -> (start, end, name of the function there) of each function of
# that name; only names that several functions of the object have
Statics = dict[str, dict[str, list[tuple[int, int, str]]]]


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
    # every self cost at its finest: (function, file, line, address) -> cost
    cells: dict[tuple[Fn, str, int, int], list[int]] = field(default_factory=dict)
    # call sites: (caller, callee, file, line) -> [calls, inclusive cost...]
    call_sites: dict[tuple[Fn, Fn, str, int], list[int]] = field(default_factory=dict)
    own_file: dict[Fn, str] = field(default_factory=dict)  # the file of fl= at fn=
    totals: list[int] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def total(self, event: str = "Ir") -> int:
        return self.totals[self.events.index(event)] if event in self.events else 0


def parse(path: str | Path, statics: Statics | None = None) -> CallgrindData:
    path = Path(path)
    with path.open(encoding="utf-8", errors="replace") as f:
        return _parse_lines(limits.IOLines(f, path.name), path.name, statics)


def parse_bytes(raw: bytes, name: str) -> CallgrindData:
    """An out file's contents, read as `parse` reads the file; `name` is for errors."""
    with io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace") as f:
        return _parse_lines(f, name, None)


def _parse_lines(lines: Iterable[str], name: str, statics: Statics | None) -> CallgrindData:
    parser = _Parser(name, statics or {})
    for number, line in enumerate(lines, 1):
        parser.line_number = number
        parser.feed(line.rstrip("\n"))
    return parser.finish()


class _Parser:
    def __init__(self, name: str, statics: Statics) -> None:
        self.name = name
        self.statics = statics
        # the ranges of the functions named as the current one, when several share it
        self.twins: list[tuple[int, int, str]] | None = None
        self.callee_twins: list[tuple[int, int, str]] | None = None
        self.line_number = 0
        self.data = CallgrindData()
        self.names: dict[tuple[str, str], str] = {}
        self.ob = self.file = self.fl = self.fn_name = ""
        self.fn: Fn = ("", "")
        self.call: tuple[Fn, int] | None = None  # callee, call count of the next cost line
        self.cob: str | None = None
        self.prev: list[int] = [0]
        self.declared: list[int] = []  # the summary:/totals: line, to check the costs against
        self.by_valgrind = False  # valgrind always writes a summary: or totals: line

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
            if key == "fl":
                self.fl = name
        elif key == "fn":
            self.fn = (self.ob, name)
            self.twins = self._twins(self.fn)
            if self.twins is None:
                self.data.own_file.setdefault(self.fn, self.fl)
        elif key == "cob":
            self.cob = name
        elif key == "cfn":
            callee = (self.ob if self.cob is None else self.cob, name)
            self.callee_twins = self._twins(callee)
            self.call = (callee, 0)

    def _twins(self, fn: Fn) -> list[tuple[int, int, str]] | None:
        if not self.statics:
            return None
        return self.statics.get(fn[0], {}).get(merged_name(fn[1]))

    def calls_line(self, value: str) -> None:
        if self.call is None:
            self.fail("calls= without a cfn= before it")
        try:
            count = int(value.split()[0])
        except (ValueError, IndexError):
            self.fail(f"bad call count {value!r}")
        callee = self.call[0]
        if self.callee_twins is not None and "instr" in self.data.positions:
            tokens = value.split()
            at = self.data.positions.index("instr")
            if len(tokens) > at + 1:
                target = self.subposition(tokens[at + 1], self.prev[at])
                callee = _twin(callee, self.callee_twins, target)
        self.call = (callee, count)

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
                self.data.totals = self.declared = self.numbers(value.split())
        elif key in META_KEYS:
            self.data.meta.setdefault(key, value)
        if key == "desc" or (key == "creator" and value.startswith(VALGRIND_CREATORS)):
            self.by_valgrind = True

    def numbers(self, tokens: list[str]) -> list[int]:
        try:
            values = [int(t) for t in tokens]
        except ValueError:
            self.fail(f"expected event counts, got {' '.join(tokens)[:60]!r}")
        for value in values:
            if not 0 <= value <= limits.MAX_VALUE:
                self.fail(f"event count {value:.6g} is out of range (0 to 2^53)")
        return values

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
        line = self.prev[positions.index("line")] if "line" in positions else 0
        if not 0 <= line <= MAX_LINE_NUMBER:
            self.fail(f"line number {line} is out of range")
        return line

    def address(self) -> int:
        positions = self.data.positions
        return self.prev[positions.index("instr")] if "instr" in positions else 0

    def function(self, address: int) -> Fn:
        """The current function, the one of its name at `address` when several share it
        (the one whose entry this is decides its own file)."""
        if self.twins is None:
            return self.fn
        fn = _twin(self.fn, self.twins, address)
        if any(start == address for start, _end, _name in self.twins):
            self.data.own_file[fn] = self.fl
        else:
            self.data.own_file.setdefault(fn, self.fl)
        return fn

    def add_self(self, costs: list[int]) -> None:
        address = self.address()
        fn = self.function(address)
        by_site = self.data.self_costs.setdefault(fn, {})
        line = self.line()
        _add(by_site, (self.file, line), costs)
        if "instr" in self.data.positions:
            _add(self.data.instr, (fn[0], fn[1], address), costs)
        _add(self.data.cells, (fn, self.file, line, address), costs)

    def add_call(self, costs: list[int]) -> None:
        assert self.call is not None
        callee, count = self.call
        line = self.line()
        caller = self.function(self.address())
        _add(self.data.calls.setdefault(callee, {}), (caller, self.file, line), costs)
        _add(self.data.call_sites, (caller, callee, self.file, line), [count, *costs])
        self.call = None
        self.cob = None

    def finish(self) -> CallgrindData:
        data = self.data
        if not data.events:
            raise UserError(
                f"{self.name}: no events: header; pass a callgrind.out or cachegrind.out file"
            )
        if self.by_valgrind and not self.declared:
            raise UserError(
                f"{self.name}: no summary: or totals: line, which valgrind writes at the end; "
                "the file is cut short, record it again"
            )
        costs = _sum_costs(data.self_costs, len(data.events))
        for event, declared, cost in zip(data.events, self.declared, costs, strict=False):
            if cost < declared * COMPLETE_SHARE:
                raise UserError(
                    f"{self.name}: its costs add up to {cost:,} {event} but its summary/totals "
                    f"line says {declared:,}; the file is cut short, record it again"
                )
        if not data.totals:
            data.totals = costs
        return data


def exact_counts(data: CallgrindData) -> ExactCounts:
    """The out file's counts as the columnar model the views read (model/counts.py)."""
    width = len(data.events)
    fn_ids: dict[Fn, int] = {}
    file_ids: dict[str, int] = {}

    def fn_id(fn: Fn) -> int:
        found = fn_ids.get(fn)
        if found is None:
            found = fn_ids[fn] = len(fn_ids)
        return found

    def file_id(file: str) -> int:
        found = file_ids.get(file)
        if found is None:
            found = file_ids[file] = len(file_ids)
        return found

    cells = Columns(CELL_COLUMNS, width)
    for (fn, file, line, address), costs in data.cells.items():
        cells.append((fn_id(fn), file_id(file), line, address), costs)
    calls = Columns(CALL_COLUMNS, width)
    for (caller, callee, file, line), (count, *costs) in data.call_sites.items():
        calls.append((fn_id(caller), fn_id(callee), file_id(file), line, count), costs)
    functions = sorted(fn_ids, key=fn_ids.__getitem__)
    own_files = [file_id(data.own_file.get(fn, "")) for fn in functions]
    return ExactCounts(
        events=list(data.events),
        totals=list(data.totals),
        functions=functions,
        own_files=own_files,
        files=sorted(file_ids, key=file_ids.__getitem__),
        cells=cells,
        calls=calls,
        meta=dict(data.meta),
    )


def apart(path: Path, data: CallgrindData) -> CallgrindData:
    """The file parsed again with the same-named functions of an object apart (m4's two
    static `peek_token`s, input.c's and gnulib's regcomp.c's, were one function with
    both counts), when the objects it counted, as they are now and not rebuilt since it
    was written, define such functions with a name it counted; else `data`.

    Their symbols' address ranges decide, not callgrind's files: callgrind books one
    function under every file its blocks start in (an inlined header's), and a .c file
    may include another (gnulib's regex.c includes regcomp.c)."""
    statics = _statics(data, path.stat().st_mtime)
    return parse(path, statics) if statics else data


def _statics(data: CallgrindData, written: float) -> Statics:
    # imported here: the views that read this module's parser never read an ELF file
    from perfsleuth.binaries.binary import binary_at
    from perfsleuth.binaries.symbol_table import STT_FUNC

    counted: dict[str, set[str]] = defaultdict(set)
    for ob, fn in data.self_costs:
        counted[ob].add(merged_name(fn))
    out: Statics = {}
    for ob, names in counted.items():
        binary = binary_at(ob)
        if binary is None or Path(ob).stat().st_mtime > written:
            continue
        ranges: dict[str, set[tuple[int, int]]] = defaultdict(set)
        for symbol in binary.symbols(".symtab", frozenset({STT_FUNC})):
            if symbol.name in names and symbol.defined and symbol.size:
                ranges[symbol.name].add((symbol.value, symbol.value + symbol.size))
        twins = {name: sorted(spans) for name, spans in ranges.items() if len(spans) > 1}
        named = _named_twins(data, ob, twins) if twins else {}
        if named:
            out[ob] = named
    return out


def _named_twins(
    data: CallgrindData, ob: str, twins: dict[str, list[tuple[int, int]]]
) -> dict[str, list[tuple[int, int, str]]]:
    """Each range named by the file of its lowest counted instruction (its entry, as a
    rule): `peek_token (input.c)`; by the whole path, or the address, when two share it.
    Only the names of which two ranges or more ran: one that ran alone keeps its name, as
    callgrind_annotate gives it (gawk's copies of awk.h's static force_string_fmt, one in
    each .c file calling it, of which one ran)."""
    lowest: dict[tuple[str, int], tuple[int, str]] = {}  # (name, start) -> (address, file)
    for fn, file, _line, address in data.cells:
        name = merged_name(fn[1])
        for start, end in twins.get(name, ()) if fn[0] == ob else ():
            if start <= address < end and (address, file) < lowest.get((name, start), (end, "")):
                lowest[name, start] = (address, file)
    ran = {
        name: [span for span in spans if (name, span[0]) in lowest] for name, spans in twins.items()
    }
    return {
        name: [
            (start, end, f"{name} ({label})")
            for (start, end), label in zip(
                spans, _labels([lowest[name, start][1] for start, _ in spans], spans), strict=True
            )
        ]
        for name, spans in ran.items()
        if len(spans) > 1
    }


def _labels(files: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """The file name of each, its path where two share the name, its address where two
    share the path or it has none."""
    names = [Path(file).name for file in files]
    labels = [
        file if names.count(name) > 1 else name for file, name in zip(files, names, strict=True)
    ]
    return [
        hex(start) if labels.count(label) > 1 or label == NO_SOURCE else label
        for (start, _end), label in zip(spans, labels, strict=True)
    ]


def _twin(fn: Fn, twins: list[tuple[int, int, str]], address: int) -> Fn:
    """fn, named as the function of its name whose range holds `address` (f'2 keeps its
    level's suffix)."""
    for start, end, name in twins:
        if start <= address < end:
            return (fn[0], name + fn[1][len(merged_name(fn[1])) :])
    return fn


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
    return profile_of(parse(path), event)


def function_name(fn: Fn) -> str:
    """A function's name in the Profile: recursion levels (f'2) are f, as a sampling
    profiler sees them (its stacks still show f calling f)."""
    return RECURSION_SUFFIX.sub("", fn[1])


def profile_of(data: CallgrindData, event: str = "Ir") -> Profile:
    """The Profile of a parsed out file (see `read`)."""
    index = data.events.index(event) if event in data.events else 0
    primary = data.events[index]
    builder = ProfileBuilder(unit=EVENT_UNITS.get(primary, "events"), meta=_meta(data, primary))
    chains = _Chains(data, index, builder)
    for fn, sites in data.self_costs.items():
        leaves = [
            (
                builder.frame_id(Frame(function_name(fn), dso=fn[0], file=file, line=line)),
                costs[index],
            )
            for (file, line), costs in sites.items()
            if costs[index]
        ]
        if leaves:
            ups = [(chains.chain(node), fraction) for node, fraction in chains.up[fn]]
            _add_split(builder, leaves, ups)
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
    leaves: list[tuple[int, int]],
    ups: list[tuple[tuple[int, ...], float]],
) -> None:
    """Pair a function's lines with its caller chains so both get exactly their share.

    Lines (heaviest first) and chains (heaviest first) are matched like two
    cumulative distributions laid side by side, which needs len(lines) +
    len(chains) - 1 samples instead of one per line and chain. Which line goes
    with which chain is arbitrary: callgrind does not record it.
    """
    leaves = sorted(leaves, key=lambda leaf: -leaf[1])
    total = float(sum(cost for _leaf, cost in leaves))
    shares = [(chain, total * fraction) for chain, fraction in ups]
    shares[-1] = (shares[-1][0], float("inf"))  # the last chain takes the rounding rest
    j, chain_left = 0, shares[0][1]
    for leaf, cost in leaves:
        line_left = float(cost)
        while line_left > 0:
            part = min(line_left, chain_left)
            if part > 0:
                builder.add_ids((leaf, *shares[j][0]), part)
            line_left -= part
            chain_left -= part
            if chain_left <= 0 and j + 1 < len(shares):
                j += 1
                chain_left = shares[j][1]


class _Chains:
    """Caller chains of each function with the fraction of its cost each one gets.

    Chains are nodes of a trie (frame id, parent node), node 0 the empty chain.
    Functions calling each other in a cycle (a strongly connected component of
    the call graph) are walked as one: a member's chain is its direct caller,
    then the calls that entered the cycle from outside, in proportion to their
    cost, so the cycle's callers get all of its cost and paths do not explode.
    """

    def __init__(self, data: CallgrindData, index: int, builder: ProfileBuilder) -> None:
        self.builder = builder
        self.own = {fn: sum(c[index] for c in s.values()) for fn, s in data.self_costs.items()}
        self.callers: dict[Fn, dict[tuple[Fn, str, int], int]] = {
            callee: {key: c[index] for key, c in sites.items() if key[0] != callee and c[index]}
            for callee, sites in data.calls.items()
        }
        self.out: dict[Fn, int] = defaultdict(int)
        callees: dict[Fn, list[Fn]] = defaultdict(list)
        for callee, sites in self.callers.items():
            for caller in sorted({key[0] for key in sites}):
                callees[caller].append(callee)
                self.out[caller] += sum(c for key, c in sites.items() if key[0] == caller)
        self.nodes: list[tuple[int, int]] = [(-1, -1)]
        self.node_ids: dict[tuple[int, int], int] = {}
        self.frames: dict[int, Chain] = {0: ()}
        self.bare: dict[int, int] = {}
        self.outer: dict[int, Chain] = {0: ()}
        self.up: dict[Fn, list[tuple[int, float]]] = {}
        self.component: dict[Fn, int] = {}
        nodes = set(self.own) | set(self.callers) | set(callees)
        for number, members in enumerate(_components(nodes, callees)):
            self.component.update(dict.fromkeys(members, number))
            self._walk(members)

    def node(self, frame: int, parent: int) -> int:
        found = self.node_ids.get((frame, parent))
        if found is None:
            found = self.node_ids[frame, parent] = len(self.nodes)
            self.nodes.append((frame, parent))
        return found

    def chain(self, node: int) -> Chain:
        """The frame ids of a node, innermost first."""
        missing = []
        while node not in self.frames:
            missing.append(node)
            node = self.nodes[node][1]
        chain = self.frames[node]
        for node in reversed(missing):
            chain = self.frames[node] = (self.nodes[node][0], *chain)
        return chain

    def _outer(self, node: int, marker: int) -> Chain:
        """A node's frames outermost first, without call sites or TRUNCATED markers."""
        missing = []
        while node not in self.outer:
            missing.append(node)
            node = self.nodes[node][1]
        chain = self.outer[node]
        for node in reversed(missing):
            frame = self.nodes[node][0]
            if frame != marker:
                chain = (*chain, self._bare(frame))
            self.outer[node] = chain
        return chain

    def _bare(self, frame: int) -> int:
        """The frame of the same function without a call site, for merging chains."""
        found = self.bare.get(frame)
        if found is None:
            f = self.builder.profile.frames[frame]
            found = self.bare[frame] = self.builder.frame_id(Frame(f.function, dso=f.dso))
        return found

    def _caller_frame(self, caller: Fn, file: str, line: int) -> int:
        frame = Frame(function_name(caller), dso=caller[0], file=file, line=line)
        return self.builder.frame_id(frame)

    def _walk(self, members: list[Fn]) -> None:
        """Set `up` for one component, whose callers outside it are all done."""
        number = self.component[members[0]]
        if len(members) == 1:
            fn = members[0]
            sites = self.callers.get(fn, {})
            total = max(sum(sites.values()), self.own.get(fn, 0) + self.out[fn])
            self.up[fn] = self._limit(self._spread(sites, total, number, {}))
            return
        entries = {
            key: cost
            for fn in members
            for key, cost in self.callers.get(fn, {}).items()
            if self.component[key[0]] != number
        }
        entered = self._spread(entries, sum(entries.values()), number, {})
        for fn in members:
            sites = self.callers.get(fn, {})
            self.up[fn] = self._limit(self._spread(sites, sum(sites.values()), number, entered))

    def _spread(
        self,
        sites: dict[tuple[Fn, str, int], int],
        total: int,
        number: int,
        entered: dict[int, float],
    ) -> dict[int, float]:
        """Chains over `sites` in proportion to cost: the caller's frame, then its
        own chains, or for a caller in component `number`, the `entered` ones."""
        result: dict[int, float] = defaultdict(float)
        for (caller, file, line), cost in sites.items():
            frame = self._caller_frame(caller, file, line)
            inside = self.component[caller] == number
            parents = entered.items() if inside else self.up[caller]
            for parent, fraction in parents:
                result[self.node(frame, parent)] += cost / total * fraction
        rest = 1.0 - sum(result.values())
        if rest > 1e-12:
            result[0] += rest
        return result

    def _limit(self, chains: dict[int, float]) -> list[tuple[int, float]]:
        """At most about MAX_CHAINS chains, heaviest first.

        The light ones keep only their outermost frames, as many as fit and
        without call sites, below a TRUNCATED marker frame: outer callers (main,
        ...) keep their inclusive cost, those cut out lose what went through them.
        """
        ranked = sorted(chains.items(), key=lambda item: -item[1])
        if len(ranked) <= MAX_CHAINS:
            return ranked
        keep, light = ranked[: MAX_CHAINS // 2], ranked[MAX_CHAINS // 2 :]
        marker = self.builder.frame_id(TRUNCATED)
        outer = [(self._outer(node, marker), fraction) for node, fraction in light]
        depth = max(len(frames) for frames, _f in outer)
        while depth and len({frames[:depth] for frames, _f in outer}) > MAX_CHAINS // 2:
            depth //= 2
        cut: dict[int, float] = defaultdict(float)
        for frames, fraction in outer:
            parent = 0
            for frame in frames[:depth]:
                parent = self.node(frame, parent)
            cut[self.node(marker, parent)] += fraction
        return keep + sorted(cut.items(), key=lambda item: -item[1])


def _components(nodes: set[Fn], callees: dict[Fn, list[Fn]]) -> list[list[Fn]]:
    """Strongly connected components, callers' components before their callees'.

    Tarjan's algorithm, iterative; it finds components callees first.
    """
    index: dict[Fn, int] = {}
    low: dict[Fn, int] = {}
    stack: list[Fn] = []
    on_stack: set[Fn] = set()
    found: list[list[Fn]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(callees.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            fn, todo = work[-1]
            callee = next(todo, None)
            if callee is not None:
                if callee not in index:
                    index[callee] = low[callee] = len(index)
                    stack.append(callee)
                    on_stack.add(callee)
                    work.append((callee, iter(callees.get(callee, ()))))
                elif callee in on_stack:
                    low[fn] = min(low[fn], index[callee])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[fn])
            if low[fn] == index[fn]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == fn:
                        break
                found.append(sorted(members))
    found.reverse()
    return found
