"""Last-15-minutes TopN before compaction: the collector's head and its batch files.

A fleet of N one-CPU hosts (fleet_store_bench's windows: 10 s, 19 Hz, Zipf-like stacks)
pushes 15 minutes of windows through a head as the collector runs it: flushed every
30 s of windows (what its 30 s timer does at this rate), the last 30 s left in the log.
Then `fleet top` of the last 15 minutes runs in this process (DuckDB) a few times, as
`serve` runs it; prints the median and the spread as JSON, and the first query apart:
it is what a fresh `perfsleuth fleet top` costs every time (the second reads the small
files whole, which later ones keep: fleet/kept_files.py).
Grafana Pyroscope answers the same question from its head in 31-49 ms (issue 27,
measured elsewhere).

    .venv/bin/python bench/fleet_head_query.py [--hosts 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time

from fleet_store_bench import SERVICES, WINDOW_S, stack_pool, window

from perfsleuth.fleet import queries
from perfsleuth.store.fleet import FleetStore

MINUTES = 15
FLUSH_S = 30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(1)
    pools = {s: stack_pool(s, 3000, rng) for s in SERVICES}
    end = time.time() // WINDOW_S * WINDOW_S
    start = end - MINUTES * 60
    with tempfile.TemporaryDirectory() as root:
        store = FleetStore(root)
        head = store.head(flush_s=3600, flush_rows=1 << 40)
        samples = 0
        for t in range(int(start), int(end), WINDOW_S):
            if t > start and (t - start) % FLUSH_S == 0 and end - t >= FLUSH_S:
                head.flush()
            for h in range(args.hosts):
                service = SERVICES[h % len(SERVICES)]
                w = window(h, t, 1, pools[service], service, rng)
                samples += w.profile.num_samples
                head.append(w)
        selection = store.select(start, end)
        times = []
        for _ in range(args.repeats):
            began = time.perf_counter()
            answer = queries.top(store, start, end, n=20)
            times.append(time.perf_counter() - began)
        result = {
            "hosts": args.hosts,
            "samples": samples,
            "parquet_samples_files": len(selection.samples),
            "head_windows": len(selection.head.records),
            "top_total_samples": answer["samples"],
            "top_ms_median": round(1000 * statistics.median(times)),
            "first_top_ms": round(1000 * times[0]),
            "top_ms": [round(1000 * t) for t in times],
        }
        head.close()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
