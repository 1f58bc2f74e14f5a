"""`--where 'service=api,host=~web-.*,version!=1.4'`: label conditions over fleet samples.

Keys are the LABELS columns (host, service, pid, comm, exe, build_id, cgroup) or any
user label. `=` and `!=` compare exactly, `=~` and `!~` match a regular expression
against the whole value. A sample without a user label has "" for it. A comma starts a
new condition only when a key and an operator follow it; otherwise it is part of the
value, so a regex may hold one (`host=~web-[0-9]{1,3}`). `type` is the profile type
(cpu, alloc_space, ...): without a condition on it, CPU profiles only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UserError
from ..model.fleet import DEFAULT_TYPE, LABEL_NAME, PROFILE_TYPES

OPERATORS = ("!~", "=~", "!=", "=")
KEY = LABEL_NAME
NEXT_CONDITION = re.compile(rf",(?=\s*{KEY.pattern}\s*(?:!~|=~|!=|=))")
TYPE_KEY = "type"


@dataclass(frozen=True)
class Condition:
    key: str
    op: str  # one of OPERATORS
    value: str


def parse(where: str | None) -> list[Condition]:
    """The conditions of a --where text, all of which a sample must meet."""
    parts = NEXT_CONDITION.split(where or "")
    conditions = [_condition(part.strip()) for part in parts if part.strip()]
    if not any(c.key == TYPE_KEY for c in conditions):
        conditions.append(Condition(TYPE_KEY, "=", DEFAULT_TYPE))
    return conditions


def profile_type(where: str | None) -> str:
    """The one profile type a --where selects (`type=...`), else the default."""
    found = [c.value for c in parse(where) if c.key == TYPE_KEY and c.op == "="]
    return found[0] if found and found[0] in PROFILE_TYPES else DEFAULT_TYPE


def with_type(where: str | None, kind: str | None) -> str | None:
    """--where with --type's condition added (None: the default, CPU)."""
    if kind is None:
        return where
    return f"{TYPE_KEY}={kind}" + (f",{where}" if where else "")


def holds(condition: Condition, value: str) -> bool:
    """The condition on one value, in Python (for what the engines do not read)."""
    if condition.op in ("=", "!="):
        return (value == condition.value) == (condition.op == "=")
    return (re.fullmatch(condition.value, value) is not None) == (condition.op == "=~")


def _condition(text: str) -> Condition:
    for op in OPERATORS:
        key, found, value = text.partition(op)
        if found and "=" not in key and "!" not in key:
            key = key.strip()
            if not KEY.fullmatch(key):
                break
            if op.endswith("~"):
                _check_regex(value)
            return Condition(key, op, value)
    raise UserError(
        f"bad --where condition {text!r}: write key=value, key!=value, key=~regex or key!~regex"
    )


def _check_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as e:
        raise UserError(f"bad regular expression {pattern!r} in --where: {e}") from None
