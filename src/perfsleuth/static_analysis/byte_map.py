"""The `--verify` change for a loop that maps bytes through a `switch` (bitcoin's
SwapBase64: `switch (from[i]) { case '-': to[i] = '+'; break; ... default: to[i] =
from[i]; }`): the map computed without branches, a block of 16 bytes at a time into a
local array, copied out with memcpy.

Neither compiler vectorises a loop holding a switch (clang: "loop contains a switch
statement"; GCC: "control flow in loop"), and the compilers turn a chain of `?:` back
into one (GCC's if-to-switch, clang's SimplifyCFG), so hoisting the reads or char8_t
leave such a loop scalar. The map as arithmetic (`key ^ ((key == '-') * ('-' ^ '+'))
^ ...`: one case matches, its term turns the key into its value) has no branch, and
the local block is what GCC -O2 needs too: its "very cheap" cost model adds no runtime
alias check between `from` and `to` and no epilogue, but a loop of exactly 16 byte
stores into a local array needs neither. The bytes left over (fewer than 16) run
through the original loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Bytes per block: one SSE2 vector, what both compilers use at -O2 on x86-64.
BLOCK = 16
KEY = "perfsleuth_key"
BLOCK_NAME = "perfsleuth_block"
STEP = "perfsleuth_j"
NAME = r"[A-Za-z_]\w*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*"
CONSTANT = r"'(?:\\.|[^'\\])+'|-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
HEADER = re.compile(
    r"for\s*\(\s*(?P<declared>(?:[A-Za-z_][\w:]*\s+)*?)(?P<index>[A-Za-z_]\w*)\s*=\s*"
    r"(?P<start>[^;]+?)\s*;\s*(?P=index)\s*<\s*(?P<bound>[^;]+?)\s*;\s*"
    r"(?:\+\+\s*(?P=index)|(?P=index)\s*\+\+|(?P=index)\s*\+=\s*1)\s*\)\s*"
)
SWITCH = re.compile(rf"switch\s*\(\s*(?P<source>{NAME})\s*\[\s*(?P<index>\w+)\s*\]\s*\)\s*\{{")
LABEL = re.compile(rf"\s*(?:case\s+(?P<label>{CONSTANT})|default)\s*:")
STORE = re.compile(
    rf"\s*(?P<target>{NAME})\s*\[\s*(?P<index>\w+)\s*\]\s*=\s*(?P<value>[^;]+?)\s*;\s*"
    r"(?P<ends>break\s*;)?\s*"
)

CHANGE = f"map the bytes without branches, {BLOCK} at a time into a local block copied with memcpy"
FIX = (
    f"compute the switch's byte map without branches, {BLOCK} bytes at a time into a local "
    "array copied out with memcpy: both GCC and clang then vectorise it (a loop holding a "
    "switch stays scalar whatever the types; `advise --verify` writes and proves it)"
)


@dataclass
class ByteMap:
    """`target[index] = map(source[index])` for index from start while < bound: the
    map as (label, value) pairs and the value of any other key (None: the key)."""

    declared: str
    index: str
    start: str
    bound: str
    source: str
    target: str
    cases: list[tuple[str, str]]  # (label, value)
    default: str | None


def blocked(loop: str) -> str | None:
    """The loop (its text from `for` to the end of its last line) with its byte map
    computed branch-free in blocks, the rest through the loop as it was; None when
    the loop is not a byte map through a switch."""
    header = HEADER.match(loop)
    if header is None:
        return None
    body_end = _statement_end(loop, header.end())
    if body_end is None:
        return None
    byte_map = _byte_map(header, loop[header.end() : body_end])
    if byte_map is None:
        return None
    rest = f"for (; {byte_map.index} < {byte_map.bound}; ++{byte_map.index}) "
    return _blocks(byte_map) + rest + loop[header.end() : body_end] + " }" + loop[body_end:]


def _statement_end(text: str, at: int) -> int | None:
    """Where the loop's body starting at `at` ends: after its closing brace."""
    if not text.startswith("{", at) and not text.startswith("switch", at):
        return None
    opened = text.index("{", at)
    depth = 0
    for end in range(opened, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            if text.startswith("switch", at):
                return end + 1
            inner = text[at + 1 : end].strip()
            return end + 1 if inner.startswith("switch") else None
    return None


def _byte_map(header: re.Match[str], body: str) -> ByteMap | None:
    index = header["index"]
    inner = body.strip()
    if inner.startswith("{"):
        inner = inner[1:-1].strip()
    switch = SWITCH.match(inner)
    if switch is None or switch["index"] != index or not inner.endswith("}"):
        return None
    arms = _arms(inner[switch.end() : -1], index)
    if arms is None:
        return None
    targets = {target for target, _, _ in arms}
    if len(targets) != 1:
        return None
    source = switch["source"]
    key = f"{source}[{index}]"
    # A value spelled as the key (`to[i] = from[i]`) is the label's own value.
    mapped = [
        (label, label if label and re.sub(r"\s+", "", value) == key else value)
        for _, labels, value in arms
        for label in labels
    ]
    defaults = [value for label, value in mapped if label is None]
    cases = [(label, value) for label, value in mapped if label is not None]
    if len(defaults) != 1 or not all(re.fullmatch(CONSTANT, v) for _, v in cases):
        return None
    default = None if re.sub(r"\s+", "", defaults[0]) == key else defaults[0]
    if default is not None and not re.fullmatch(CONSTANT, default):
        return None
    declared = header["declared"].strip()
    return ByteMap(
        declared, index, header["start"], header["bound"], source, targets.pop(), cases, default
    )


def _arms(text: str, index: str) -> list[tuple[str, list[str | None], str]] | None:
    """The switch's arms as (target, labels, value): each group of labels followed
    by one store `target[index] = value;` and a `break` (the last may omit it)."""
    arms: list[tuple[str, list[str | None], str]] = []
    labels: list[str | None] = []
    at = 0
    while at < len(text):
        label = LABEL.match(text, at)
        if label is not None:
            labels.append(label["label"])
            at = label.end()
            continue
        store = STORE.match(text, at)
        if store is None or store["index"] != index or not labels:
            return None
        at = store.end()
        if not store["ends"] and at < len(text):
            return None  # falls through into the next arm's store
        arms.append((re.sub(r"\s+", "", store["target"]), labels, store["value"]))
        labels = []
    return arms if arms and not labels else None


def _blocks(m: ByteMap) -> str:
    """The block loop, opening a scope for the index, which the rest's loop closes."""
    element = f"__typeof__({m.target}[{m.index}])"
    # Only one label matches: its term turns the base (the key, or the default
    # value) into the label's value.
    base = KEY if m.default is None else m.default
    terms = "".join(
        f" ^ (({KEY} == {label}) * ({label if m.default is None else m.default} ^ {value}))"
        for label, value in m.cases
        if m.default is not None or value != label
    )
    declared = f"{m.declared} " if m.declared else ""
    return (
        f"{{ {declared}{m.index} = {m.start}; "
        f"for (; {m.index} + {BLOCK} <= ({m.bound}); {m.index} += {BLOCK}) {{ "
        f"{element} {BLOCK_NAME}[{BLOCK}]; "
        f"for (int {STEP} = 0; {STEP} < {BLOCK}; ++{STEP}) {{ "
        f"const __typeof__({m.source}[{m.index}]) {KEY} = {m.source}[{m.index} + {STEP}]; "
        f"{BLOCK_NAME}[{STEP}] = ({element})({base}{terms}); }} "
        f"__builtin_memcpy(&{m.target}[{m.index}], {BLOCK_NAME}, sizeof {BLOCK_NAME}); }} "
    )
