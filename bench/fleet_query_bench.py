"""Fleet query latency: TopN over 24 h of N one-CPU hosts at 19 Hz, DuckDB and Spark.

Appending 1.6 billion samples window by window would take this machine a day, so the
store is written as compaction leaves it: per hour partition one compacted raw file and
its minute and hour rollups, per day one stacks and one frames file. Every host-hour is
68,400 samples drawn from its service's pool of 3,000 stacks with fleet_store_bench's
Zipf-like skew, split over 3 processes (one of 24 draws per service, picked at random
per host-hour); a row is one (host, process, stack) of the hour, as the hour rollup
holds it. The raw and minute files are hard links of the hour rows (as if agents
pushed hour-long windows): a whole-day TopN reads the hour rollups only, which is what
it measures. Prints a table and a JSON document.

    .venv/bin/python bench/fleet_query_bench.py [--hosts 10,100,1000] [--data DIR]
        [--spark local[1],local[2]]   (--spark '' skips Spark)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from fleet_store_bench import SERVICES, stack_pool

from perfsleuth.fleet import queries
from perfsleuth.fleet.engine import Engine
from perfsleuth.fleet.engines import engine_of
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.fleet.layout import (
    FRAMES_SCHEMA,
    LAYOUT_FILE,
    SAMPLES_SCHEMA,
    STACKS_SCHEMA,
    frame_id,
    samples_dir,
    stack_id,
)

RATE_HZ = 19
HOURS = 24
PER_HOST_HOUR = RATE_HZ * 3600  # one CPU, always busy
POOL = 3000
PROCESS_SHARES = (0.6, 0.3, 0.1)
DAY = 1_717_200_000 - 1_717_200_000 % 86400  # 2024-06-01 00:00 UTC
REPEATS = 3
BANK = 24  # distinct host-hour draws per service


def zipf(size: int) -> list[float]:
    """P(k) of fleet_store_bench's pool[min(int(paretovariate(1.1)) - 1, size - 1)]."""
    p = [k**-1.1 - (k + 1) ** -1.1 for k in range(1, size + 1)]
    p[-1] += 1 - sum(p)
    return p


def dictionaries(pools: dict) -> tuple[pa.Table, pa.Table, dict[str, list[int]]]:
    """The day's stacks and frames, and each service's stack ids in pool order."""
    frames: dict[int, dict] = {}
    stacks: dict[int, list[int]] = {}
    ids = {}
    for service, pool in pools.items():
        ids[service] = []
        for stack in pool:
            fids = [frame_id(f) for f in stack]
            for f, fid in zip(stack, fids, strict=True):
                frames[fid] = {"frame_id": fid, **dataclasses.asdict(f)}
            stacks[stack_id(fids)] = fids
            ids[service].append(stack_id(fids))
    stack_table = pa.table(
        {"stack_id": list(stacks), "frame_ids": list(stacks.values())}, schema=STACKS_SCHEMA
    )
    frame_rows = [{n: row[n] for n in FRAMES_SCHEMA.names} for row in frames.values()]
    return stack_table, pa.Table.from_pylist(frame_rows, schema=FRAMES_SCHEMA), ids


def draws(ids: dict[str, list[int]], rng: random.Random) -> dict[str, list[list[pa.Table]]]:
    """BANK host-hours per service: per process, its stacks' sample counts (pure Python,
    so a day of a thousand hosts reuses these draws instead of making 24,000)."""
    p = zipf(POOL)
    bank: dict[str, list[list[pa.Table]]] = {}
    for service, service_ids in ids.items():
        bank[service] = []
        for _ in range(BANK):
            drawn = Counter(
                zip(
                    rng.choices(range(len(PROCESS_SHARES)), PROCESS_SHARES, k=PER_HOST_HOUR),
                    rng.choices(service_ids, p, k=PER_HOST_HOUR),
                    strict=True,
                )
            )
            bank[service].append([_counts(drawn, k) for k in range(len(PROCESS_SHARES))])
    return bank


def _counts(drawn: Counter, process: int) -> pa.Table:
    pairs = sorted((s, n) for (k, s), n in drawn.items() if k == process)
    samples = pa.array([n for _, n in pairs], pa.int64())
    return pa.table(
        {
            "stack_id": pa.array([s for s, _ in pairs], pa.int64()),
            "samples": samples,
            "cpu_ns": pa.array([round(n * 1e9 / RATE_HZ) for _, n in pairs], pa.int64()),
        }
    )


def hour_table(hosts: int, hour: int, bank: dict, rng: random.Random) -> pa.Table:
    """One row per (host, process, stack) of the hour with its samples and CPU ns."""
    parts = []
    when = pa.scalar((DAY + hour * 3600) * 1000, pa.timestamp("ms"))
    for h in range(hosts):
        service = SERVICES[h % len(SERVICES)]
        for k, counts in enumerate(rng.choice(bank[service])):
            n = counts.num_rows
            labels = {
                "time": when,
                "host": f"host-{h:04d}",
                "service": service,
                "pid": 1000 + h * 10 + k,
                "comm": service,
                "exe": f"/usr/bin/{service}",
                "build_id": f"b{k}",
                "cgroup": "",
                "labels": '{"env": "prod", "version": "1.4"}',
            }
            columns = {name: pa.repeat(value, n) for name, value in labels.items()}
            parts.append(pa.table({**columns, **counts.to_pydict()}).cast(SAMPLES_SCHEMA))
    return pa.concat_tables(parts)


def generate(root: Path, hosts: int) -> dict:
    """The compacted store of `hosts` hosts over one day; its row and byte counts."""
    rng = random.Random(42)
    pools = {s: stack_pool(s, POOL, rng) for s in SERVICES}
    stacks, frames, ids = dictionaries(pools)
    bank = draws(ids, rng)
    day = time.strftime("%Y-%m-%d", time.gmtime(DAY))
    for table, data in (("stacks", stacks), ("frames", frames)):
        (root / table / f"dt={day}").mkdir(parents=True)
        pq.write_table(data, root / table / f"dt={day}" / "c-0.parquet", compression="zstd")
    rows = 0
    for hour in range(HOURS):
        data = hour_table(hosts, hour, bank, rng)
        rows += data.num_rows
        partition = f"dt={day}/hour={hour:02d}"
        hour_file = root / samples_dir("hour", partition) / "r-0.parquet"
        hour_file.parent.mkdir(parents=True)
        pq.write_table(data, hour_file, compression="zstd")
        for level, name in (("minute", "r-0.parquet"), ("raw", "c-0.parquet")):
            (root / samples_dir(level, partition)).mkdir(parents=True)
            os.link(hour_file, root / samples_dir(level, partition) / name)
    (root / LAYOUT_FILE).write_text('{"layout": 1}')
    size = sum(f.stat().st_size for f in (root / "samples" / "level=hour").rglob("*.parquet"))
    return {"rows": rows, "hour_rollup_bytes": size}


def timed(store: FleetStore, engine: Engine, where: str | None = None) -> dict:
    """Seconds of the first TopN and the median of the next ones."""
    seconds = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        doc = queries.top(store, DAY, DAY + HOURS * 3600, where, n=20, engine=engine)
        seconds.append(time.perf_counter() - began)
    return {
        "first_s": round(seconds[0], 3),
        "warm_s": round(statistics.median(seconds[1:]), 3),
        "samples": doc["samples"],
        "top": doc["rows"][0]["function"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", default="10,100,1000")
    parser.add_argument("--data", help="keep the generated stores here (reused when present)")
    parser.add_argument("--spark", default="local[1],local[2]", help="Spark masters to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data or tmp)
        results = []
        stores = {}
        for hosts in [int(h) for h in args.hosts.split(",")]:
            root = data / f"fleet-{hosts}"
            began = time.perf_counter()
            info_file = root / "bench.json"
            if not info_file.exists():
                info_file.parent.mkdir(parents=True, exist_ok=True)
                info = generate(root, hosts)
                info_file.write_text(json.dumps(info))
            info = json.loads(info_file.read_text())
            store = FleetStore(str(root))
            stores[hosts] = store
            row = {"hosts": hosts, "samples": hosts * HOURS * PER_HOST_HOUR, **info}
            row["generate_s"] = round(time.perf_counter() - began, 1)
            row["levels"] = store.select(DAY, DAY + HOURS * 3600).levels
            row["duckdb"] = timed(store, engine_of("duckdb"))
            row["duckdb_where"] = timed(store, engine_of("duckdb"), "service=api")
            assert row["duckdb"]["samples"] == row["samples"]
            results.append(row)
            print(json.dumps(row), flush=True)
        for master in filter(None, args.spark.split(",")):
            from perfsleuth.fleet import engine_spark

            began = time.perf_counter()
            engine_spark.session(master)
            startup = round(time.perf_counter() - began, 1)
            for row in results:
                spark = timed(stores[row["hosts"]], engine_of("spark", master))
                assert spark["samples"] == row["samples"]
                row[master] = {**spark, "session_start_s": startup}
                print(json.dumps({"hosts": row["hosts"], master: row[master]}), flush=True)
        print(table(results, [m for m in args.spark.split(",") if m]))
        print(json.dumps(results, indent=1))


def table(results: list[dict], masters: list[str]) -> str:
    head = ["hosts", "samples", "rows read", "DuckDB", "DuckDB where"] + [
        f"Spark {m}" for m in masters
    ]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in results:
        cells = [
            f"{r['hosts']:,}",
            f"{r['samples'] / 1e6:,.1f} M",
            f"{r['rows'] / 1e6:,.2f} M",
            f"{r['duckdb']['warm_s']:.2f} s (first {r['duckdb']['first_s']:.2f})",
            f"{r['duckdb_where']['warm_s']:.2f} s",
        ] + [f"{r[m]['warm_s']:.2f} s (first {r[m]['first_s']:.2f})" for m in masters]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
