"""The exact counts of a count run (`record --mode count`), kept as one document.

Parsed once, when the run is recorded, into `ExactCounts`: columnar tables the views
read directly (no view parses callgrind's text again):

* cells: one row per (function, file, line, instruction address) with the exact
  count of every event executed there;
* calls: one row per call site (caller, callee, file, line) with the number of calls
  and the inclusive cost of the calls made there.

Beside them the document keeps callgrind's own out file, byte for byte, for tools
such as callgrind_annotate or kcachegrind; the source files counted, as they were when
the run was recorded (so an annotated listing or a diff stays right after the sources
are edited); and a fingerprint of every counted file (size, mtime, SHA-256), so a
listing that reads a file from disk can tell it changed since the run.
formats/tool_output/counts.py makes one from a callgrind.out file.

Its classes are plain ones, not dataclasses: importing dataclasses (with the inspect it
imports) and making the classes cost 0.009 CPU-s, a sixth of `annotate` on a small program,
which reads this module's ExactCounts (model/count_listing.py); base64's codec is
binascii's, without base64's own import.
"""

from __future__ import annotations

import binascii
import json
import re
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .documents import Upgrade
from .slot_values import slot_fields

Sources = dict[str, list[str]]  # file -> its lines, as they were when the run was recorded
Stamps = dict[str, list]  # file -> [size, mtime, sha256 hex] when the run was recorded
Fn = tuple[str, str]  # (object, function name)
Site = tuple[str, int]  # (file, line)
K = TypeVar("K")

# callgrind names the deeper levels of a recursion f'2, f'3 (--separate-recs)
RECURSION_SUFFIX = re.compile(r"'[0-9]+$")

EVENT_UNITS = {"Ir": "instructions"}  # the unit a count of an event is in
NO_SOURCE = "???"  # callgrind's file name for code without line information
CELL_COLUMNS = (("fn", "i"), ("file", "i"), ("line", "i"), ("address", "q"))
CALL_COLUMNS = (("caller", "i"), ("callee", "i"), ("file", "i"), ("line", "i"), ("calls", "q"))


def merged_name(function: str) -> str:
    """A recursion level's function (f'2 -> f)."""
    return RECURSION_SUFFIX.sub("", function)


def _pack(raw: bytes) -> str:
    return binascii.b2a_base64(zlib.compress(raw, 6), newline=False).decode("ascii")


def _unpack(text: str) -> bytes:
    return zlib.decompress(binascii.a2b_base64(text))


def _pack_array(values: array) -> str:
    if sys.byteorder == "big":  # pragma: no cover - the store's bytes are little-endian
        values = array(values.typecode, values)
        values.byteswap()
    return _pack(values.tobytes())


def _unpack_array(typecode: str, text: str) -> array:
    values = array(typecode)
    values.frombytes(_unpack(text))
    if sys.byteorder == "big":  # pragma: no cover
        values.byteswap()
    return values


def is_address(name: str) -> bool:
    return name.startswith("0x") and all(c in "0123456789abcdefABCDEF" for c in name[2:])


def unnamed(ob: str) -> str:
    """The one name of an object's code without a symbol, for comparing two builds."""
    return f"[unnamed code in {Path(ob).name}]"


class Columns:
    """Integer columns of equal length and a flat cost array, `width` costs a row."""

    __slots__ = ("names", "width", "data", "costs")

    def __init__(
        self,
        names: tuple[tuple[str, str], ...],
        width: int,
        data: dict[str, array] | None = None,
        costs: array | None = None,
    ) -> None:
        self.names = names
        self.width = width
        self.data = {} if data is None else data
        self.costs = array("q") if costs is None else costs
        for name, code in names:
            self.data.setdefault(name, array(code))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Columns) and slot_fields(self) == slot_fields(other)

    def __len__(self) -> int:
        return len(self.costs) // self.width if self.width else 0

    def append(self, values: Sequence[int], costs: Sequence[int]) -> None:
        for (name, _code), value in zip(self.names, values, strict=True):
            self.data[name].append(value)
        self.costs.extend(costs)

    def column(self, name: str) -> array:
        return self.data[name]

    def event(self, index: int) -> array:
        """One event's cost of every row."""
        return self.costs[index :: self.width]

    def to_json(self) -> dict[str, str]:
        return {
            **{name: _pack_array(self.data[name]) for name, _ in self.names},
            "costs": _pack_array(self.costs),
        }

    @classmethod
    def from_json(cls, names: tuple[tuple[str, str], ...], width: int, doc: dict) -> Columns:
        data = {name: _unpack_array(code, doc[name]) for name, code in names}
        return cls(names, width, data, _unpack_array("q", doc["costs"]))


class ExactCounts:
    """Every count of a count run, as columnar tables (see the module's doc)."""

    __slots__ = (
        "events",
        "totals",
        "functions",
        "own_files",
        "files",
        "cells",
        "calls",
        "meta",
        "first_levels",
    )

    def __init__(
        self,
        events: list[str],
        totals: list[int],
        functions: list[Fn],  # by function id
        own_files: list[int],  # the file id of each function's own code (callgrind's fl=)
        files: list[str],  # by file id
        cells: Columns,
        calls: Columns,
        meta: dict | None = None,
        # merged_recursion's: the counts with the levels apart, and the id there of the
        # first level of each function merged from several
        first_levels: tuple[ExactCounts, dict[int, int]] | None = None,
    ) -> None:
        self.events = events
        self.totals = totals
        self.functions = functions
        self.own_files = own_files
        self.files = files
        self.cells = cells
        self.calls = calls
        self.meta = {} if meta is None else meta
        self.first_levels = first_levels

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactCounts) and slot_fields(self) == slot_fields(other)

    def _replace(self, **changes: Any) -> ExactCounts:
        """A copy with the fields named changed (dataclasses.replace's)."""
        return ExactCounts(**{name: getattr(self, name) for name in self.__slots__} | changes)

    @staticmethod
    def empty(events: list[str]) -> ExactCounts:
        width = len(events)
        return ExactCounts(
            events,
            [0] * width,
            [],
            [],
            [],
            Columns(CELL_COLUMNS, width),
            Columns(CALL_COLUMNS, width),
        )

    def index(self, event: str = "Ir") -> int:
        return self.events.index(event) if event in self.events else 0

    def total(self, event: str = "Ir") -> int:
        return self.totals[self.events.index(event)] if event in self.events else 0

    # -- recursion ----------------------------------------------------------------------

    def merged_recursion(self) -> ExactCounts:
        """The counts with every recursion level (f'2, f'3) merged into its function,
        as cg_annotate shows them; calls between levels become calls of f to itself."""
        ids: dict[Fn, int] = {}
        remap = array("i")
        functions: list[Fn] = []
        own_files: list[int] = []
        for fid, (ob, name) in enumerate(self.functions):
            key = (ob, merged_name(name))
            new = ids.get(key)
            if new is None:
                new = ids[key] = len(functions)
                functions.append(key)
                own_files.append(self.own_files[fid])
            remap.append(new)
        if len(functions) == len(self.functions):
            return self
        cells = _remapped(self.cells, {"fn": remap})
        calls = _remapped(self.calls, {"caller": remap, "callee": remap})
        merged = [new for new, n in Counter(remap).items() if n > 1]
        first = {remap[fid]: fid for fid, fn in enumerate(self.functions) if fn in ids}
        levels = {new: first[new] for new in merged if new in first}
        return self._replace(
            functions=functions,
            own_files=own_files,
            cells=cells,
            calls=calls,
            first_levels=(self, levels),
        )

    def first_level_inclusive(self, event: str = "Ir") -> dict[int, int]:
        """Function id -> the inclusive cost of the first recursion level of each function
        merged from several (callgrind's f, not f'2), as callgrind gives it: the levels
        merged, a function's calls to another one hold its deeper levels again when its
        recursion goes through that one (jq's jv_free -> jvp_array_free -> jv_free'2:
        self plus calls said 14.82% of the run, callgrind 7.08%)."""
        if self.first_levels is None:
            return {}
        split, levels = self.first_levels
        inclusive = split.inclusive_by_id(event)
        return {fid: inclusive[level] for fid, level in levels.items()}

    def first_level_ids(self) -> dict[int, int]:
        """With the recursion levels apart: each deeper level's id (f'2) -> its first
        level's (f), which holds it: callgrind gives a function a deeper level when it is
        entered while it runs."""
        ids = {fn: fid for fid, fn in enumerate(self.functions)}
        return {
            fid: ids[ob, merged_name(name)]
            for fid, (ob, name) in enumerate(self.functions)
            if RECURSION_SUFFIX.search(name) and (ob, merged_name(name)) in ids
        }

    def by_line(self) -> ExactCounts:
        """The counts per (function, file, line): no instruction addresses and no calls,
        all that a listing reads (model/count_listing.py)."""
        width = len(self.events)
        cells = Columns(CELL_COLUMNS, width)
        for (fid, file, line), costs in self._summed(enumerate(self._cell_keys())).items():
            cells.append((fid, file, line, 0), costs)
        return self._replace(cells=cells, calls=Columns(CALL_COLUMNS, width))

    def _summed(self, rows: Iterable[tuple[int, K]]) -> dict[K, list[int]]:
        """key -> the summed counts of every event of the cell rows given as (row, key)."""
        width = len(self.events)
        costs = self.cells.costs
        out: dict[K, list[int]] = {}
        for row, key in rows:
            start = row * width
            got = out.get(key)
            if got is None:
                out[key] = list(costs[start : start + width])
            else:
                for i in range(width):
                    got[i] += costs[start + i]
        return out

    # -- per function -------------------------------------------------------------------

    def call_edges(self, event: str = "Ir") -> Iterator[tuple[int, int, int, int, int]]:
        """(caller, callee, file, line, cost of EVENT) of every counted call."""
        calls = self.calls
        return zip(
            calls.column("caller"),
            calls.column("callee"),
            calls.column("file"),
            calls.column("line"),
            calls.event(self.index(event)),
            strict=True,
        )

    def self_by_id(self, event: str = "Ir") -> list[int]:
        """Exact self count of `event` per function id."""
        out = [0] * len(self.functions)
        for fid, cost in zip(
            self.cells.column("fn"), self.cells.event(self.index(event)), strict=True
        ):
            out[fid] += cost
        return out

    def inclusive_by_id(self, event: str = "Ir") -> list[int]:
        """Self count plus the inclusive cost of the calls a function makes to others
        (a call to itself is part of its own cost already), at most the run's total; a
        function merged from recursion levels, its first level's (first_level_inclusive)."""
        out = self.self_by_id(event)
        calls = self.calls
        for caller, callee, cost in zip(
            calls.column("caller"),
            calls.column("callee"),
            calls.event(self.index(event)),
            strict=True,
        ):
            if caller != callee:
                out[caller] += cost
        for fid, cost in self.first_level_inclusive(event).items():
            out[fid] = cost
        cap = self.total(event)
        return [min(cost, cap) for cost in out]

    def inclusive_of(self, sets: Iterable[Collection[int]], event: str = "Ir") -> list[int]:
        """The cost run under any of the functions of each set of ids: callgrind's
        inclusive cost of one function (inclusive_by_id) made that of several. Each
        one's total once, less the calls into one of them (into its first level, when
        its levels are apart) from another, which that caller's total holds already:
        qsort -> qsort_r -> msort_with_tmp is 24.4% of MuJS's run, not 3 x 24.4%. A
        function of a set entered again under another through functions outside it (a
        sort in a sort's comparator) is counted twice: the counted calls do not say under
        what they were made. At most the run's total."""
        inclusive = self.inclusive_by_id(event)
        split, remap = self._levels()
        first = [not RECURSION_SUFFIX.search(fn) for _ob, fn in split.functions]
        arcs = [
            (remap[caller], remap[callee], arc)
            for caller, callee, arc in zip(
                split.calls.column("caller"),
                split.calls.column("callee"),
                split.calls.event(split.index(event)),
                strict=True,
            )
            if first[callee] and remap[caller] != remap[callee]
        ]
        out = []
        for fids in sets:
            members = set(fids)
            cost = sum(inclusive[fid] for fid in members)
            cost -= sum(arc for outer, into, arc in arcs if into in members and outer in members)
            out.append(min(cost, self.total(event)))
        return out

    def _levels(self) -> tuple[ExactCounts, Sequence[int]]:
        """The counts with their recursion levels apart (these counts, when none were
        merged) and each of their function ids' id here."""
        if self.first_levels is None:
            return self, range(len(self.functions))
        split = self.first_levels[0]
        ids = {fn: fid for fid, fn in enumerate(self.functions)}
        return split, [ids[ob, merged_name(fn)] for ob, fn in split.functions]

    def function_self(self, event: str = "Ir", *, merge_unnamed: bool = False) -> dict[str, int]:
        """Exact self count of `event` per function name (objects merged, as names are shown).

        Code without a symbol is named by its address, which moves with every rebuild;
        `merge_unnamed` puts all of an object's unnamed code under one name so that two
        builds compare."""
        out: dict[str, int] = {}
        for (ob, fn), cost in zip(self.functions, self.self_by_id(event), strict=True):
            name = unnamed(ob) if merge_unnamed and is_address(fn) else fn
            out[name] = out.get(name, 0) + cost
        return out

    def entry_sites(self) -> list[Site]:
        """Each function's own (file, line): the site meta["entries"] names for it in a
        file it has counted lines in (its entry instruction's outermost frame, found by
        the symbolizer: symbols/entries.py), else the line of its lowest counted
        instruction (its entry) in its own file, else its lowest line there, else
        anywhere. Not the lowest line:
        code inlined from a function above it has lower ones; nor the entry instruction's
        line as valgrind gives it, which may be a helper's inlined there."""
        unknown = (3, 0, 0, 0)  # a file without instruction addresses (cachegrind's) may
        # name the entries in meta["entries"] instead: {function: [file, line]}
        best: list[tuple[int, int, int, int]] = [unknown] * len(self.functions)
        counted: list[set[int]] = [set() for _ in self.functions]
        cells = self.cells
        for fid, file, line, address in zip(
            cells.column("fn"),
            cells.column("file"),
            cells.column("line"),
            cells.column("address"),
            strict=True,
        ):
            if line <= 0:
                continue
            counted[fid].add(file)
            rank = (0 if address else 1) if file == self.own_files[fid] else 2
            key = (rank, address if rank == 0 else line, file, line)
            if key < best[fid]:
                best[fid] = key
        entries = self.meta.get("entries", {})
        named = self._named_entries(entries, counted)
        return [
            _site(entries[self.functions[fid][1]], ("", 0))
            if fid in named
            else (self.files[file], line)
            if rank == 0 or (rank < 3 and self.functions[fid][1] not in entries)
            else _site(entries.get(self.functions[fid][1]), (self._own_file(fid), 0))
            for fid, (rank, _order, file, line) in enumerate(best)
        ]

    def _named_entries(self, entries: dict, counted: list[set[int]]) -> set[int]:
        """The functions whose entry meta["entries"] names in a file they have counted
        lines in (a name that two objects define, strcmp in the loader and the C
        library, is one's only). Not only their own file (callgrind's fl=): that is
        their entry instruction's, which may be an inlined helper's (a Rust function's
        own main.rs under core's non_null.rs)."""
        if not entries:
            return set()
        file_ids = {file: i for i, file in enumerate(self.files)}
        return {
            fid
            for fid, (_ob, fn) in enumerate(self.functions)
            if fn in entries and file_ids.get(entries[fn][0]) in counted[fid]
        }

    def _own_file(self, fid: int) -> str:
        return self.files[self.own_files[fid]] if self.files else ""

    def function_id(self, ob: str, fn: str) -> int | None:
        for fid, key in enumerate(self.functions):
            if key == (ob, fn):
                return fid
        return None

    def instructions(self, fid: int, event: str = "Ir") -> dict[int, int]:
        """address -> exact count of one function's instructions (empty without
        callgrind's --dump-instr=yes)."""
        out: dict[int, int] = {}
        cells = self.cells
        for f, address, cost in zip(
            cells.column("fn"), cells.column("address"), cells.event(self.index(event)), strict=True
        ):
            if f == fid and address:
                out[address] = out.get(address, 0) + cost
        return out

    # -- per line -----------------------------------------------------------------------

    def line_self(self, event: str = "Ir") -> dict[Site, int]:
        """Exact self count of `event` per (file, line)."""
        out: dict[tuple[int, int], int] = {}
        cells = self.cells
        sites = zip(cells.column("file"), cells.column("line"), strict=True)
        for site, cost in zip(sites, cells.event(self.index(event)), strict=True):
            out[site] = out.get(site, 0) + cost
        files = self.files
        return {(files[file], line): cost for (file, line), cost in out.items()}

    def file_lines(self, functions: set[str] | None = None) -> dict[str, dict[int, list[int]]]:
        """file -> line -> exact counts of every event (all functions' code on that line)."""
        keep = self._kept(functions)
        kept = (
            (row, (file, line))
            for row, (fid, file, line) in enumerate(self._cell_keys())
            if keep is None or fid in keep
        )
        out: dict[str, dict[int, list[int]]] = {}
        for (file, line), costs in self._summed(kept).items():
            merged = out.setdefault(self.files[file] or NO_SOURCE, {})
            old = merged.get(line)
            merged[line] = (
                costs if old is None else [a + b for a, b in zip(old, costs, strict=True)]
            )
        return out

    def unlocated(self, functions: set[str] | None = None) -> dict[str, list[int]]:
        """`function [object]` -> counts of its code without line information."""
        keep = self._kept(functions)
        width = len(self.events)
        out: dict[str, list[int]] = {}
        costs = self.cells.costs
        for row, (fid, file, _line) in enumerate(self._cell_keys()):
            if (keep is not None and fid not in keep) or self.files[file] not in ("", NO_SOURCE):
                continue
            ob, fn = self.functions[fid]
            got = out.setdefault(f"{fn} [{Path(ob).name}]", [0] * width)
            for i in range(width):
                got[i] += costs[row * width + i]
        return out

    def _cell_keys(self) -> Iterator[tuple[int, int, int]]:
        cells = self.cells
        return zip(cells.column("fn"), cells.column("file"), cells.column("line"), strict=True)

    def _kept(self, functions: set[str] | None) -> set[int] | None:
        if functions is None:
            return None
        return {fid for fid, (_ob, fn) in enumerate(self.functions) if fn in functions}

    def own_site_files(self, functions: set[str]) -> set[str]:
        """The files of the FUNCTIONS' own lines (entry_sites)."""
        keep = self._kept(functions) or set()
        return {site[0] for fid, site in enumerate(self.entry_sites()) if fid in keep and site[0]}

    def counted_files(self) -> list[str]:
        """Files with a counted line (line > 0)."""
        ids = {
            file
            for file, line in zip(self.cells.column("file"), self.cells.column("line"), strict=True)
            if line > 0
        }
        return sorted(self.files[i] for i in ids)

    # -- the document -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "totals": self.totals,
            "functions": [list(fn) for fn in self.functions],
            "own_files": self.own_files,
            "files": self.files,
            "cells": self.cells.to_json(),
            "calls": self.calls.to_json(),
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ExactCounts:
        width = len(doc["events"])
        return cls(
            events=list(doc["events"]),
            totals=list(doc["totals"]),
            functions=[(ob, fn) for ob, fn in doc["functions"]],
            own_files=list(doc["own_files"]),
            files=list(doc["files"]),
            cells=Columns.from_json(CELL_COLUMNS, width, doc["cells"]),
            calls=Columns.from_json(CALL_COLUMNS, width, doc["calls"]),
            meta=dict(doc.get("meta", {})),
        )


def stale_sources(pairs: list[tuple[str, str]] | list[list[str]]) -> list[str]:
    """The warning of each (source file, object) pair built_before found."""
    return [
        f"{file} was modified after {ob} was built; its lines may not match the counts "
        "(rebuild, and record again)"
        for file, ob in pairs
    ]


def _site(entry: list | None, otherwise: Site) -> Site:
    return (str(entry[0]), int(entry[1])) if entry else otherwise


def _remapped(columns: Columns, maps: dict[str, array]) -> Columns:
    data = dict(columns.data)
    for name, remap in maps.items():
        data[name] = array(data[name].typecode, (remap[i] for i in data[name]))
    return Columns(columns.names, columns.width, data, columns.costs)


def _add_sources(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: documents recorded before they carried the source files get none
    (their listings read the files from disk); later unversioned ones keep theirs."""
    return {"sources": _pack(b"{}"), **doc}


def _tables_to_come(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 2 -> 3: no parsed tables and no fingerprints yet; the store parses the
    kept out file once when it reads the document (store/documents.py)."""
    return {"exact": None, "stamps": {}, **doc}


class Counts:
    KIND: ClassVar[str] = "counts"
    NAME: ClassVar[str] = "callgrind.out"  # the document's name in the store
    VERSION: ClassVar[int] = 3
    UPGRADES: ClassVar[Sequence[Upgrade]] = (_add_sources, _tables_to_come)

    __slots__ = ("callgrind_out", "sources", "exact", "stamps")

    def __init__(
        self,
        callgrind_out: bytes,
        sources: Sources | None = None,
        # None only between reading an old document and parsing it
        exact: ExactCounts | None = None,
        stamps: Stamps | None = None,
    ) -> None:
        self.callgrind_out = callgrind_out
        self.sources = {} if sources is None else sources
        self.exact = exact
        self.stamps = {} if stamps is None else stamps

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counts) and slot_fields(self) == slot_fields(other)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "callgrind.out",
            "encoding": "zlib+base64",
            "size": len(self.callgrind_out),
            "data": _pack(self.callgrind_out),
            "sources": _pack(json.dumps(self.sources).encode()),
            "exact": self.exact.to_json() if self.exact is not None else None,
            "stamps": self.stamps,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Counts:
        exact = doc.get("exact")
        return cls(
            _unpack(doc["data"]),
            json.loads(_unpack(doc["sources"])),
            ExactCounts.from_json(exact) if exact else None,
            dict(doc.get("stamps") or {}),
        )

    @property
    def counts(self) -> ExactCounts:
        if self.exact is None:
            raise AssertionError("a counts document is read through the store, which parses it")
        return self.exact
