"""Shared by the cache-mode integration tests: the stored projections and pahole's layout lines."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from cli_runner import perfsleuth

# pahole's top-level members (one tab in): `type name[dims]:bits;  /* offset:bit size */`,
# and the closing line of a nested struct or union it prints inline, `} name;  /* ... */`
PAHOLE_MEMBER = re.compile(
    r"^\t(?![\t}])(.+?)\s+(\w+)(?:\[\d+\])*(?::\d+)?;\s+/\*\s+(\d+)(?::\s*(\d+))?\s+(\d+)\s+\*/"
)
PAHOLE_INLINE_END = re.compile(r"^\t\} (\w+)(?:\[\d+\])*;\s+/\*\s+(\d+)\s+(\d+)\s+\*/")


def pahole_members(binary: Path, struct: str) -> list[tuple[str, int, int | None, int]]:
    """(name, offset, bit offset or None, size) of each top-level member, in order."""
    text = subprocess.run(
        ["pahole", "-C", struct, str(binary)], capture_output=True, text=True, check=True
    ).stdout
    members = []
    for row in text.splitlines():
        if m := PAHOLE_MEMBER.match(row):
            bit = int(m[4]) if m[4] is not None else None
            members.append((m[2], int(m[3]), bit, int(m[5])))
        elif m := PAHOLE_INLINE_END.match(row):
            members.append((m[1], int(m[2]), None, int(m[3])))
    return members


def layout_members(layout: dict) -> list[tuple[str, int, int | None, int]]:
    """The same of one of perfsleuth's layouts."""
    return [(f["name"], f["offset"], f.get("bit_offset"), f["size"]) for f in layout["fields"]]


def record_cache(
    store: Path, binary: Path, function: str, *args: str, calls: int = 0, first: bool = False
) -> Path:
    """`perfsleuth record --mode cache --function FUNCTION` of BINARY ARGS into store;
    calls: --max-calls, when given; first: the first calls, not 1 in k over the run."""
    limit = ["--max-calls", str(calls)] if calls else []
    limit += ["--sample-calls", "1"] if first else []
    perfsleuth(
        store, "record", "--mode", "cache", "--function", function, *limit,
        "--", str(binary), *args,
    )  # fmt: skip
    return store


def cache_doc(store: Path) -> dict:
    """The first traced function's document of `perfsleuth cache show`."""
    shown = perfsleuth(store, "cache", "show", "--format", "json")
    return json.loads(shown.stdout)["functions"][0]


def lookup_layouts(store: Path, binary: Path, function: str = "find_session") -> dict:
    """The layouts, by variable, of the first 20,000 lookups of a map example of
    20,000 entries (`BINARY 20000 20000`)."""
    record_cache(store, binary, function, "20000", "20000", calls=20000, first=True)
    return {lay["variable"]: lay for lay in cache_doc(store)["layouts"]}


def example_layouts(example: str, tmp_path_factory) -> dict:
    """lookup_layouts() of examples/bin/EXAMPLE, in a store of its own."""
    binary = Path(__file__).resolve().parents[1] / "examples" / "bin" / example
    return lookup_layouts(tmp_path_factory.mktemp(example) / "store", binary)


def hot_inside_the_map(layouts: dict) -> list[str]:
    """The hot members inside the map's one field (a table wrapping its hash, m_ht)."""
    (field,) = layouts["map"]["fields"]
    return sorted(m["name"] for m in field["inside"] if m["hot"])


def inside_heat(layout: dict, field: str) -> dict[str, tuple[int, bool]]:
    """name -> (offset, hot) of the members inside one field of a layout."""
    (found,) = [f for f in layout["fields"] if f["name"] == field]
    return {m["name"]: (m["offset"], m["hot"]) for m in found["inside"]}


def a_lookups_pair(layout: dict) -> tuple[dict[str, tuple[int, bool]], bool, float]:
    """Of a layout of pair<uint64_t, Session> (session64.hh's Session, the pair 72
    bytes): the value's members' (offset, hot), whether the key is hot, and the lines
    touched per call. A lookup reads the key, last_seen and hits: bytes 0 to 20, which
    for pairs at 8-byte steps of a line cross one for two starts in 8 (1.25 lines)."""
    hot = {f["name"]: f["hot"] for f in layout["fields"]}
    return inside_heat(layout, "second"), hot["first"], layout["lines_touched_per_call"]


# a_lookups_pair() of a layout as it should be: key, last_seen and hits hot, 1.25 lines
LOOKUPS_PAIR = (
    {"last_seen": (8, True), "hits": (16, True), "flags": (20, False), "bytes_in": (24, False),
     "bytes_out": (32, False), "peer": (40, False)},
    True,
)  # fmt: skip
