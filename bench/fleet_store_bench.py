"""Fleet store size: bytes per sample after compaction, with a realistic stack mix.

Hosts sample at 19 Hz per CPU in 10 s windows; stacks (8-40 frames, shared prefixes)
are drawn with a Zipf-like skew from a pool per service, as a real fleet's are.
Prints one JSON document: samples, files and bytes before and after compaction, split
into raw samples, rollups, dictionaries (stacks + frames) and window markers.

    .venv/bin/python bench/fleet_store_bench.py [--hosts 20] [--minutes 60] [--cpus 4]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.store.fleet import FleetStore

RATE_HZ = 19.0
WINDOW_S = 10
SERVICES = ("api", "db", "cache", "batch")


def stack_pool(service: str, size: int, rng: random.Random) -> list[list[Frame]]:
    """Stacks leaf first; callers come from a call tree, so prefixes repeat."""
    functions = [
        Frame(f"{service}::fn{i}", f"/usr/bin/{service}", f"{service}/f{i // 10}.cc", 10 + i)
        for i in range(400)
    ]
    libs = [
        Frame(n, d)
        for n, d in (
            ("malloc", "libc.so.6"),
            ("free", "libc.so.6"),
            ("memcpy", "libc.so.6"),
            ("inflate", "libz.so.1"),
            ("do_syscall_64", "[kernel.kallsyms]"),
        )
    ]
    pool = []
    for _ in range(size):
        depth = rng.randint(8, 40)
        chain = [functions[0]] + [
            functions[min(int(rng.paretovariate(0.8)), 399)] for _ in range(depth - 2)
        ]
        leaf = rng.choice(libs) if rng.random() < 0.3 else rng.choice(functions)
        pool.append(list(reversed([*chain, leaf])))
    return pool


def window(
    host: int, start: float, cpus: int, pool: list[list[Frame]], service: str, rng: random.Random
) -> Window:
    builder = ProfileBuilder()
    pids = [1000 + host * 10 + k for k in range(3)]
    for _ in range(int(RATE_HZ * WINDOW_S * cpus)):
        stack = pool[min(int(rng.paretovariate(1.1)) - 1, len(pool) - 1)]
        pid = rng.choice(pids)
        builder.add(stack, 1.0, thread=Thread(pid + rng.randint(0, 7), pid, service))
    return Window(
        id=f"h{host}-{int(start)}",
        start=start,
        end=start + WINDOW_S,
        profile=builder.build(),
        labels={"host": f"host-{host:04d}", "service": service, "version": "1.4", "env": "prod"},
        processes={p: Process(f"/usr/bin/{service}", f"{p:040x}") for p in pids},
        rate_hz=RATE_HZ,
    )


def sizes(root: Path) -> dict[str, dict[str, int]]:
    groups = {
        "raw": "samples/level=raw",
        "rollups_minute": "samples/level=minute",
        "rollups_hour": "samples/level=hour",
        "stacks": "stacks",
        "frames": "frames",
        "markers": "windows",
    }
    out = {}
    for name, rel in groups.items():
        files = [p for p in (root / rel).rglob("*") if p.is_file()]
        out[name] = {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--cpus", type=int, default=4)
    parser.add_argument("--pool", type=int, default=3000, help="distinct stacks per service")
    args = parser.parse_args()
    rng = random.Random(42)
    pools = {s: stack_pool(s, args.pool, rng) for s in SERVICES}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fleet"
        store = FleetStore(str(root))
        t0 = time.time() // 3600 * 3600 - 3600 * 2
        samples = 0
        began = time.perf_counter()
        for k in range(args.minutes * 60 // WINDOW_S):
            for h in range(args.hosts):
                service = SERVICES[h % len(SERVICES)]
                w = window(h, t0 + k * WINDOW_S, args.cpus, pools[service], service, rng)
                samples += w.profile.num_samples
                store.append(w)
        append_s = time.perf_counter() - began
        before = sizes(root)
        began = time.perf_counter()
        store.compact()
        compact_s = time.perf_counter() - began
        after = sizes(root)
    data = ("raw", "stacks", "frames")
    print(
        json.dumps(
            {
                "hosts": args.hosts,
                "minutes": args.minutes,
                "cpus": args.cpus,
                "samples": samples,
                "append_samples_per_s": round(samples / append_s),
                "compact_s": round(compact_s, 2),
                "before": before,
                "after": after,
                "bytes_per_sample_before": round(
                    sum(before[g]["bytes"] for g in before) / samples, 2
                ),
                "bytes_per_sample_after": {
                    "raw_and_dictionaries": round(
                        sum(after[g]["bytes"] for g in data) / samples, 2
                    ),
                    "with_rollups_and_markers": round(
                        sum(v["bytes"] for v in after.values()) / samples, 2
                    ),
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
