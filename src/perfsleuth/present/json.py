"""JSON: one document per command, in the shapes of docs/design.md (fractions in 0..1).

Written by orjson, indented by two spaces: the standard library's json runs its C encoder
only without an indent, and its pure-Python one made `diff --format json` of speedtest1's
count runs 0.21 CPU-s (orjson: 0.09). The document is the one json.dump(doc, indent=1,
default=str) wrote: keys that are not strings become strings, anything else JSON has no
type for becomes its str() (a dataclass or a datetime too, which orjson would write its
own way). What orjson refuses (an integer beyond 64 bits, nesting deeper than 254, a lone
surrogate such as a file name's undecodable byte) is written by json, as ASCII. A NaN or
an infinity is written as null (json wrote NaN, which is not JSON).

A small document is written here in Python, byte for byte as orjson writes it: importing
orjson (with the datetime, uuid, platform, dataclasses and inspect it imports) costs 0.02
CPU-s, a third of `diff --format json` of a small program's count runs and more than
cg_diff's whole diff of them; writing 40,000 values here (0.4-0.6 us each) costs about
as much. Larger documents (a list is taken to hold as many values as its length times its
first item's, so that a long list of rows goes to orjson before any is written), and any
holding other than dicts (string or integer keys), lists, tuples, strings, integers of 64
bits, floats, booleans and None, are orjson's.
"""

from __future__ import annotations

from _json import encode_basestring  # json.encoder's, without the json package's re

from . import Output
from .text import RENDERERS

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

# What `record` and `import` stored: JSON for scripts; people get a line on stderr.
RECORDED = "recorded"
# `fleet flame`'s stacks: folded stacks (the profile's output) for people, JSON for scripts.
FLEET_FLAME = "fleet-flame"


SMALL = 40_000  # values written in Python at most (the module's doc)
DEEPEST = 254  # orjson's nesting limit
INFINITY = float("inf")


class Unwritten(Exception):
    """A value the Python writer leaves to orjson, or a document past SMALL values."""


def encode(doc: Any) -> bytes:
    """`doc` as indented JSON in UTF-8, ending in a newline."""
    try:
        return written(doc, SMALL).encode()
    except (Unwritten, UnicodeEncodeError):  # a lone surrogate: orjson refuses it too
        pass
    import orjson  # 0.02 CPU-s: paid only by the documents written by orjson

    options = (
        orjson.OPT_INDENT_2
        | orjson.OPT_NON_STR_KEYS
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_APPEND_NEWLINE
    )
    try:
        return orjson.dumps(doc, default=str, option=options)
    except orjson.JSONEncodeError:
        import json

        return (json.dumps(doc, indent=2, default=str) + "\n").encode()


def written(doc: Any, budget: int) -> str:
    """`doc` as orjson writes it with OPT_INDENT_2, OPT_NON_STR_KEYS and
    OPT_APPEND_NEWLINE, or Unwritten when it holds more than `budget` values in its lists
    and dicts, or a value it does not write (the module's doc)."""
    out: list[str] = []
    put = out.append
    left = budget
    rows: dict[tuple[str, tuple], str] = {}  # a row's keys as written at its depth

    def row(v: dict, indent: str) -> bool:
        """A dict of scalars (a row of a view's table) written by one %-format of its keys
        as written at this depth, each value written in this loop: the function call a
        value took was most of `diff --format json`'s writing (docs/counts.md)."""
        keys = tuple(v)
        shape = rows.get((indent, keys))
        if shape is None:
            if not KEYS.issuperset(map(type, keys)):
                return False
            heads = (f"{indent}  {name(key)}: ".replace("%", "%%") + "%s" for key in keys)
            shape = rows[indent, keys] = f"{{{','.join(heads)}{indent}}}"
        values: list[str] = []
        add = values.append
        for x in v.values():
            kind = type(x)
            if kind is int:
                if not -0x8000000000000000 <= x <= 0xFFFFFFFFFFFFFFFF:
                    raise Unwritten
                add(int.__repr__(x))
            elif kind is str:
                add(encode_basestring(x))
            elif x is None:
                add("null")
            elif kind is float:
                add(number(x))
            elif kind is bool:
                add("true" if x else "false")
            else:  # not a scalar
                return False
        put(shape % tuple(values))
        return True

    def value(v: Any, indent: str) -> None:
        nonlocal left
        kind = type(v)
        if kind is str:
            put(encode_basestring(v))
        elif kind is int:
            put(integer(v))
        elif kind is float:
            put(number(v))
        elif v is None or kind is bool:
            put("null" if v is None else "true" if v else "false")
        elif kind is dict or kind is list or kind is tuple:
            if not v:
                put("{}" if kind is dict else "[]")
                return
            left -= len(v)
            if left < 0 or len(indent) > 2 * DEEPEST or (kind is not dict and too_long(v, left)):
                raise Unwritten
            inner = indent + "  "
            if kind is dict:
                if row(v, indent):
                    return
                put("{")
                for key, item in v.items():
                    put(inner)
                    put(name(key))
                    put(": ")
                    value(item, inner)
                    put(",")
                out[-1] = indent + "}"
            else:
                put("[")
                for item in v:
                    put(inner)
                    value(item, inner)
                    put(",")
                out[-1] = indent + "]"
        else:
            raise Unwritten

    value(doc, "\n")
    put("\n")
    return "".join(out)


def integer(v: int) -> str:
    if not -0x8000000000000000 <= v <= 0xFFFFFFFFFFFFFFFF:
        raise Unwritten
    return int.__repr__(v)


def too_long(items: list | tuple, left: int) -> bool:
    """Whether a list of rows like its first holds more than `left` values."""
    first = items[0]
    return type(first) in (dict, list, tuple) and len(items) * len(first) > left


def name(key: Any) -> str:
    """A dict's key as orjson writes it with OPT_NON_STR_KEYS (strings and integers)."""
    kind = type(key)
    if kind is str:
        return encode_basestring(key)
    if kind is int:
        return f'"{int.__repr__(key)}"'
    raise Unwritten


def number(v: float) -> str:
    """A float as orjson writes it: repr's shortest digits, but exponents -5 to -9 as
    0.0000ddd and e-6 to e-9; a NaN or an infinity is null."""
    if v != v or v in (INFINITY, -INFINITY):
        return "null"
    text = float.__repr__(v)
    if "e-0" not in text:
        return text
    digits, exponent = text.split("e-0")
    if exponent != "5":
        return f"{digits}e-{exponent}"
    sign = "-" if digits[0] == "-" else ""
    return f"{sign}0.0000{digits.lstrip('-').replace('.', '')}"


KEYS = frozenset((str, int))
SCALAR: dict[
    type, Callable[[Any], str]
] = {  # the writer of a scalar by its type (exact: a str's subclass is not one)
    str: encode_basestring,
    int: integer,
    float: number,
    bool: lambda v: "true" if v else "false",
    type(None): lambda _v: "null",
}


def dump(doc: Any, fh: IO[bytes]) -> None:
    fh.write(encode(doc))


OUTPUT = Output(
    name="json",
    help="one JSON document, for scripts",
    # Every document people read as text is one JSON document too.
    writers=dict.fromkeys([*RENDERERS, RECORDED, FLEET_FLAME], dump),
    binary=True,
)
