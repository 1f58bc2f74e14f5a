#!/usr/bin/env python3
"""Benchmark: predicted cache and TLB cliffs of the connection table against
measured latency.

    .venv/bin/python bench/cache_cliff.py [--repeats 2]

1. Prediction: `perfsleuth record --mode cache --function handle_packet --scale
   'n=500,1000,2000' -- conntable {n}` for examples/bin/conntable and its reordered
   twin; the fitted working set gives the n at which the lines overflow each
   cache level (sysfs sizes) and the pages overflow the TLB's reach (measured
   once per machine by `perfsleuth cache calibrate`).
2. Measurement: `conntable --sweep` times a dependent chain of random packets
   per n, --repeats times, keeping the fastest, over a window from half to twice
   each predicted n (`window`), POINTS_PER_DOUBLING sizes per doubling.
3. Knee: perfsleuth.cache.calibrate.knee, the same estimator the calibration
   uses: the capacity of the best fitting LRU miss curve, where misses begin.
4. Overhead: the same small workload natively, under lackey alone, and under
   `perfsleuth record --mode cache` (every call traced).

Prints a table and writes bench/out/cache_cliff.json.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
import time
from pathlib import Path

from perfsleuth.cache.calibrate import knee

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PERFSLEUTH = ROOT / ".venv" / "bin" / "perfsleuth"
BINARIES = {"conntable": ROOT / "examples/bin/conntable",
            "conntable-reordered": ROOT / "examples/bin/conntable-reordered"}  # fmt: skip
SCALE = "n=500,1000,2000"
LEVELS = ("L2", "TLB", "LLC")
WINDOW = 2.0  # a level's sweep runs from predicted/WINDOW to predicted*WINDOW
POINTS_PER_DOUBLING = 8
OVERHEAD_ARGS = ["2000", "8000"]


def window(level: str, prediction: dict) -> tuple[float, float]:
    """Half to twice the predicted n; the LLC's from just past the TLB's cliff (the
    earlier rise) instead, so that a knee well before its prediction shows."""
    if level == "LLC" and prediction.get("TLB"):
        return 1.5 * prediction["TLB"], WINDOW * prediction["LLC"]
    return prediction[level] / WINDOW, prediction[level] * WINDOW


def sizes(low: float, high: float) -> list[int]:
    steps = int(math.log2(high / low) * POINTS_PER_DOUBLING)
    return [round(low * 2 ** (i / POINTS_PER_DOUBLING)) for i in range(steps + 1)]


def predicted(binary: Path) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        subprocess.run(
            [PERFSLEUTH, "record", "--store", store, "--mode", "cache", "--function",
             "handle_packet", "--scale", SCALE, "--", binary, "{n}"],
            check=True, capture_output=True,
        )  # fmt: skip
        shown = subprocess.run(
            [PERFSLEUTH, "cache", "show", "--store", store, "--format", "json"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    scaling = json.loads(shown)["functions"][0]["scaling"]
    return {c["level"]: c["n"] for c in scaling["cliffs"]} | {
        "TLB": scaling["tlb"].get("n"),
        "bytes_per_n": round(scaling["fit"]["bytes_per_n"], 1),
        "pages_per_n": scaling["tlb"].get("pages_per_n"),
    }


def measured(binary: Path, ns: list[int], repeats: int) -> dict[int, float]:
    best: dict[int, float] = {}
    for _ in range(repeats):
        out = subprocess.run(
            [binary, "--sweep", ",".join(map(str, ns))], check=True, capture_output=True, text=True
        ).stdout
        for line in out.splitlines():
            if not line.startswith("#"):
                n, latency = line.split()
                best[int(n)] = min(best.get(int(n), math.inf), float(latency))
    return best


def seconds(cmd: list) -> float:
    started = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.monotonic() - started


def overhead(binary: Path) -> dict[str, float]:
    native = min(seconds([binary, *OVERHEAD_ARGS]) for _ in range(3))
    lackey = seconds(["valgrind", "--tool=lackey", "--trace-mem=yes", "--basic-counts=no",
                      "--log-file=/dev/null", binary, *OVERHEAD_ARGS])  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        traced = seconds([PERFSLEUTH, "record", "--store", Path(tmp) / "s", "--mode", "cache",
                          "--function", "handle_packet", "--max-calls", "100000", "--",
                          binary, *OVERHEAD_ARGS])  # fmt: skip
    return {"native_s": native, "lackey_s": lackey, "perfsleuth_s": traced}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, binary in BINARIES.items():
        prediction = predicted(binary)
        levels = {}
        for level in LEVELS:
            if not prediction.get(level):
                continue
            latency = measured(binary, sizes(*window(level, prediction)), args.repeats)
            k = round(knee(list(latency.items())) or 0)
            levels[level] = {"predicted_n": prediction[level], "measured_knee_n": k,
                             "error": k / prediction[level] - 1, "latency_ns": latency}  # fmt: skip
        results[name] = {key: prediction[key] for key in ("bytes_per_n", "pages_per_n")} | {
            "levels": levels
        }
    results["overhead"] = overhead(BINARIES["conntable"])
    (OUT / "cache_cliff.json").write_text(json.dumps(results, indent=1))
    print("| program | level | per conn | predicted cliff (n) | measured knee (n) | error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in BINARIES:
        for level, row in results[name]["levels"].items():
            per = (f"{results[name]['pages_per_n']:.4f} pages" if level == "TLB"
                   else f"{results[name]['bytes_per_n']} B cached")  # fmt: skip
            print(f"| {name} | {level} | {per} | {row['predicted_n']:,} "
                  f"| {row['measured_knee_n']:,} | {row['error']:+.0%} |")  # fmt: skip
    cost = results["overhead"]
    workload = " ".join(OVERHEAD_ARGS)
    print(f"\nrecording `conntable {workload}`: native {cost['native_s']:.3f} s, "
          f"lackey alone {cost['lackey_s']:.2f} s, perfsleuth --mode cache "
          f"{cost['perfsleuth_s']:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
