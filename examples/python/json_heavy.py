"""A service loop that spends most of its time in the standard json module.

Each round builds a batch of orders, serializes it (json.dumps), parses it back
(json.loads) and sums a field in plain Python. perfsleuth should name json as the
hot spot, with the call sites in serialize() and parse(), and prove that orjson
speeds it up without a code change (`perfsleuth advise --verify`).

Usage: python3 json_heavy.py [ROUNDS | SECONDSs]   (default 40 rounds, ~2 s on a laptop)
"""

import json
import sys
import time


def make_orders(n):
    return [
        {
            "id": i,
            "customer": f"customer-{i % 97}",
            "items": [{"sku": f"sku-{j}", "qty": j % 5 + 1, "price": 9.99 + j} for j in range(8)],
            "paid": i % 3 == 0,
            "note": "deliver to the back door, ring twice" if i % 7 == 0 else None,
        }
        for i in range(n)
    ]


def serialize(orders):
    return json.dumps(orders)


def parse(text):
    return json.loads(text)


def total_quantity(orders):
    total = 0
    for order in orders:
        for item in order["items"]:
            total += item["qty"]
    return total


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else "40"
    seconds = float(arg[:-1]) if arg.endswith("s") else None
    limit = 10**9 if seconds is not None else int(arg)
    orders = make_orders(2000)
    checksum = 0
    started = time.perf_counter()
    rounds = 0
    while rounds < limit and (seconds is None or time.perf_counter() - started < seconds):
        text = serialize(orders)
        checksum += total_quantity(parse(text))
        rounds += 1
    elapsed = time.perf_counter() - started
    print(f"json_heavy: {rounds} rounds, checksum {checksum}, loop {elapsed:.3f} s")


if __name__ == "__main__":
    main()
