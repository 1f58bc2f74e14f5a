"""Planted: the stdlib json module for a hot dumps/loads round trip.
Fix (FIXED=1): marshal, when the data stays inside Python (orjson where it must be JSON)."""

import json
import marshal
import os

FIXED = os.environ.get("FIXED") == "1"


def roundtrip(records):
    total = 0
    for record in records:
        if FIXED:
            total += len(marshal.loads(marshal.dumps(record)))
        else:
            total += len(json.loads(json.dumps(record)))
    return total


records = [
    {"id": i, "name": f"n{i}", "tags": ["a", "b", str(i)], "score": i * 0.5} for i in range(2000)
]
print(sum(roundtrip(records) for _ in range(200)))
