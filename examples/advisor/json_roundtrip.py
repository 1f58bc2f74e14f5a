"""Planted problem: CPython's json module encodes and decodes a document in a loop
(the _json C accelerator dominates). Run with: python3 examples/advisor/json_roundtrip.py"""

import json
import sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 150
document = {
    "items": [
        {"id": i, "name": f"item{i}", "tags": ["a", "b", "c"], "price": i * 1.5}
        for i in range(2000)
    ]
}
for _ in range(ROUNDS):
    json.loads(json.dumps(document))
