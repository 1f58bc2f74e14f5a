"""Collector ingest into S3 against ingest into a folder, side by side on one machine.

The same simulated fleet (bench/fleet_sim.py's windows: real perf stacks) is pushed
to a collector whose store is a local folder, then to one whose store is a bucket of
a real S3 server on 127.0.0.1 (SeaweedFS, built by scripts/build-seaweedfs.sh), each
by the same concurrent clients; the order alternates over --rounds. It prints samples
per second of each and their ratio (target: S3 >= 0.8x the folder).

    .venv/bin/python bench/collector_s3_bench.py --hosts 100 --windows 3 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import fleet_sim  # noqa: E402
import s3server  # noqa: E402

from perfsleuth.formats.wire import window_pprof  # noqa: E402


def ingest(store: str, bodies: list, clients: int, token: str) -> float:
    """Seconds to push every body to a new collector on `store` (each acknowledged)."""
    collector, url = fleet_sim.start_collector(store, token)  # type: ignore[arg-type]
    try:
        began = time.monotonic()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(lambda b: fleet_sim.push(url, b[0], b[1], b[2], token), bodies))
        return time.monotonic() - began
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--services", type=int, default=6)
    parser.add_argument("--windows", type=int, default=3, help="windows per host")
    parser.add_argument("--cpus", type=int, default=8, help="CPUs per simulated host")
    parser.add_argument("--clients", type=int, default=8, help="concurrent pushes")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    token = "bench"
    with tempfile.TemporaryDirectory() as tmp:
        server = s3server.start(Path(tmp) / "seaweedfs")
        os.environ.update(server.env())
        rates: dict[str, list[float]] = {"folder": [], "s3": []}
        try:
            for round_ in range(args.rounds):
                # A fresh fleet each round (new window ids), the same for both stores.
                start = time.time() - 3600 * (round_ + 1)
                made = list(
                    fleet_sim.windows(
                        args.hosts,
                        args.services,
                        args.windows,
                        cpus=args.cpus,
                        start=start,
                        seed=round_ + 1,
                    )
                )
                bodies = [(window_pprof.encode(w), window_pprof.query(w), w.id) for w in made]
                samples = sum(w.profile.num_samples for w in made)
                order = ["folder", "s3"] if round_ % 2 == 0 else ["s3", "folder"]
                for kind in order:
                    store = (
                        f"{tmp}/fleet-{round_}"
                        if kind == "folder"
                        else f"s3://{server.bucket()}/fleet"
                    )
                    seconds = ingest(store, bodies, args.clients, token)
                    rates[kind].append(samples / seconds)
                    print(
                        f"round {round_ + 1} {kind:6}: {samples:,} samples in {seconds:.2f} s"
                        f" = {samples / seconds:,.0f} samples/s",
                        flush=True,
                    )
        finally:
            s3server.stop(server)
    folder, s3 = statistics.median(rates["folder"]), statistics.median(rates["s3"])
    ratio = s3 / folder
    print(f"median: folder {folder:,.0f} samples/s, S3 {s3:,.0f} samples/s: S3/folder {ratio:.2f}")


if __name__ == "__main__":
    main()
