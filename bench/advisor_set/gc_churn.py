"""Planted: a million small records kept alive while they are built (parsing a file into
dicts and lists): the cyclic collector runs every 700 new containers and traverses the
growing heap. Fix (FIXED=1): the collector off while they are built, and the records
frozen (left out of later collections) after."""

import gc
import os

FIXED = os.environ.get("FIXED") == "1"


def load(n):
    return [{"id": i, "tags": [str(i % 13), "x"], "pos": (i, i + 1)} for i in range(n)]


if FIXED:
    gc.disable()
records = load(1_500_000)
if FIXED:
    gc.freeze()
    gc.enable()
print(len(records), sum(len(r["tags"]) for r in records))
