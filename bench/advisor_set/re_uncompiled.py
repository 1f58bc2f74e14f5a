"""Planted: re.match with more distinct patterns than re's cache holds (recompiled
every call). Fix (FIXED=1): the patterns compiled once."""

import os
import re

FIXED = os.environ.get("FIXED") == "1"
PATTERNS = [rf"^key{i}=(\d+)$" for i in range(600)]
COMPILED = [re.compile(p) for p in PATTERNS] if FIXED else []


def count(lines):
    hits = 0
    for i, line in enumerate(lines):
        if FIXED:
            hits += bool(COMPILED[i % 600].match(line))
        else:
            hits += bool(re.match(PATTERNS[i % 600], line))
    return hits


lines = [f"key{i % 600}={i}" for i in range(90000)]
print(count(lines))
