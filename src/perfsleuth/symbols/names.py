"""Function names as people read them: C++ templates and argument lists collapsed."""

from __future__ import annotations

import re


def elide_templates(name: str) -> str:
    """`std::map<int, X>::find(int const&) (.cold)` -> `std::map<…>::find(…)`."""
    name = re.sub(r" \(\.[\w.]+\)$| \[clone [^\]]*\]$", "", name)
    out = []
    depth = 0
    for ch in name:
        if ch in "<(":
            if depth == 0:
                out.append(ch + "…")
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out)
