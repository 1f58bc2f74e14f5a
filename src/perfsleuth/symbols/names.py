"""Function names as people read them: C++ templates and argument lists collapsed.

The web UI shortens names with a port of `elide_templates` (ui/src/names.ts); the
end-to-end tests check that both give the same answer on tests/e2e/names.json.
"""

from __future__ import annotations

import re

_CLONE = re.compile(r" \(\.[\w.]+\)$| \[clone [^\]]*\]$", re.ASCII)
# `operator<<`, `operator()`, `operator new[]`...: brackets that open no template or list.
_OPERATOR = re.compile(
    r"operator\s*(\(\)|\[\]|<=>|<<=?|>>=?|->\*?|&&|\|\||\+\+|--|new(\[\])?|delete(\[\])?"
    r"|[-+*/%^&|~!=<>,]=?)?",
    re.ASCII,
)
_WORD = re.compile(r"\w", re.ASCII)
_ANONYMOUS = "(anonymous namespace)"


def elide_templates(name: str) -> str:
    """`std::map<int, X>::find(int const&) (.cold)` -> `std::map<…>::find(…)`."""
    name = _CLONE.sub("", name)
    out = []
    depth = 0
    i = 0
    after_token = False  # `operator<< <T>` written `operator<<<T>`: template arguments
    while i < len(name):
        token = _token_at(name, i)
        if token:
            if depth == 0:
                out.append(token)
            i += len(token)
            after_token = True
            continue
        ch = name[i]
        opens = ch == "<" and (depth > 0 or after_token or _opens_template(name, i))
        after_token = False
        if ch == "(" or opens:
            if depth == 0:
                out.append(ch + "…")
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def _opens_template(name: str, i: int) -> bool:
    """Whether the `<` at i, outside any brackets, opens template arguments: it does unless
    it starts the name or a word (Python's `<module>`, `<lambda>`, `f.<locals>.g`)."""
    return i > 0 and not (name[i - 1].isspace() or name[i - 1] == ".")


def _token_at(name: str, i: int) -> str:
    """An operator's name or `(anonymous namespace)` starting at i, else ""."""
    if name.startswith(_ANONYMOUS, i):
        return _ANONYMOUS
    if name.startswith("operator", i) and not (i and _WORD.match(name[i - 1])):
        match = _OPERATOR.match(name, i)
        return match.group() if match else ""
    return ""
