"""JSON: one document per command, in the shapes of docs/design.md (fractions in 0..1).

Written by orjson, indented by two spaces: the standard library's json runs its C encoder
only without an indent, and its pure-Python one made `diff --format json` of speedtest1's
count runs 0.21 CPU-s (orjson: 0.09). The document is the one json.dump(doc, indent=1,
default=str) wrote: keys that are not strings become strings, anything else JSON has no
type for becomes its str() (a dataclass or a datetime too, which orjson would write its
own way). What orjson refuses (an integer beyond 64 bits, nesting deeper than 254, a lone
surrogate such as a file name's undecodable byte) is written by json, as ASCII. A NaN or
an infinity is written as null (json wrote NaN, which is not JSON).
"""

from __future__ import annotations

import json
from typing import IO, Any

from . import Output
from .text import RENDERERS

# What `record` and `import` stored: JSON for scripts; people get a line on stderr.
RECORDED = "recorded"
# `fleet flame`'s stacks: folded stacks (the profile's output) for people, JSON for scripts.
FLEET_FLAME = "fleet-flame"


def encode(doc: Any) -> bytes:
    """`doc` as indented JSON in UTF-8, ending in a newline."""
    import orjson  # 3 ms: paid by the commands that write JSON, not by every command's start

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
        return (json.dumps(doc, indent=2, default=str) + "\n").encode()


def dump(doc: Any, fh: IO[bytes]) -> None:
    fh.write(encode(doc))


OUTPUT = Output(
    name="json",
    help="one JSON document, for scripts",
    # Every document people read as text is one JSON document too.
    writers=dict.fromkeys([*RENDERERS, RECORDED, FLEET_FLAME], dump),
    binary=True,
)
