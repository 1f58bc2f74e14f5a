#!/usr/bin/env python3
"""Benchmark: predicted cache cliffs of the connection table against measured latency.

    .venv/bin/python bench/cache_cliff.py [--repeats 3]

1. Prediction: `perfsleuth record --mode cache --function handle_packet --scale
   'n=500,1000,2000' -- conntable {n}` for examples/bin/conntable and its reordered
   twin; the fitted working set gives the n at which each cache level overflows.
2. Measurement: `conntable --sweep` times a dependent chain of random packets per n
   (huge pages, so the TLB stays out of it), --repeats times, keeping the fastest.
3. Knee: per cache level, over a window of sizes around it (WINDOWS), the
   breakpoint of a two-segment regression of latency on log n (continuous, least
   squares, every swept size but the two at each end tried as the breakpoint):
   where the latency's growth changes slope.
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

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PERFSLEUTH = ROOT / ".venv" / "bin" / "perfsleuth"
BINARIES = {"conntable": ROOT / "examples/bin/conntable",
            "conntable-reordered": ROOT / "examples/bin/conntable-reordered"}  # fmt: skip
SCALE = "n=500,1000,2000"
# Sizes swept for each level's knee: log-spaced, 6 points per doubling.
WINDOWS = {"L2": (500, 40000), "LLC": (20000, 2000000)}
POINTS_PER_DOUBLING = 4
OVERHEAD_ARGS = ["2000", "8000"]


def sizes(low: int, high: int) -> list[int]:
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
        "bytes_per_n": round(scaling["fit"]["bytes_per_n"], 1)
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


def knee(latency: dict[int, float]) -> int:
    points = sorted(latency.items())
    xs = [math.log(n) for n, _ in points]
    ys = [y for _, y in points]
    best = (math.inf, points[-1][0])
    for index in range(2, len(points) - 2):
        rows = [(1.0, x, max(0.0, x - xs[index])) for x in xs]
        coefficients = least_squares(rows, ys)
        if coefficients[2] <= 0:
            continue
        residual = sum(
            (sum(c * v for c, v in zip(coefficients, row, strict=True)) - y) ** 2
            for row, y in zip(rows, ys, strict=True)
        )
        best = min(best, (residual, points[index][0]))
    return best[1]


def least_squares(rows: list[tuple[float, ...]], ys: list[float]) -> list[float]:
    """Solve the normal equations (a few unknowns) by Gauss-Jordan elimination."""
    size = len(rows[0])
    matrix = [
        [sum(r[i] * r[j] for r in rows) for j in range(size)]
        + [sum(r[i] * y for r, y in zip(rows, ys, strict=True))]
        for i in range(size)
    ]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        for row in range(size):
            if row != col and matrix[col][col]:
                factor = matrix[row][col] / matrix[col][col]
                matrix[row] = [
                    a - factor * b for a, b in zip(matrix[row], matrix[col], strict=True)
                ]
    return [matrix[i][size] / matrix[i][i] if matrix[i][i] else 0.0 for i in range(size)]


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
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, binary in BINARIES.items():
        prediction = predicted(binary)
        levels = {}
        for level, (low, high) in WINDOWS.items():
            latency = measured(binary, sizes(low, high), args.repeats)
            k = knee(latency)
            levels[level] = {"predicted_n": prediction[level], "measured_knee_n": k,
                             "error": k / prediction[level] - 1, "latency_ns": latency}  # fmt: skip
        results[name] = {"bytes_per_n": prediction["bytes_per_n"], "levels": levels}
    results["overhead"] = overhead(BINARIES["conntable"])
    (OUT / "cache_cliff.json").write_text(json.dumps(results, indent=1))
    print("| program | level | B/conn cached | predicted cliff (n) | measured knee (n) | error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in BINARIES:
        for level, row in results[name]["levels"].items():
            print(f"| {name} | {level} | {results[name]['bytes_per_n']} | {row['predicted_n']:,} "
                  f"| {row['measured_knee_n']:,} | {row['error']:+.0%} |")  # fmt: skip
    cost = results["overhead"]
    workload = " ".join(OVERHEAD_ARGS)
    print(f"\nrecording `conntable {workload}`: native {cost['native_s']:.3f} s, "
          f"lackey alone {cost['lackey_s']:.2f} s, perfsleuth --mode cache "
          f"{cost['perfsleuth_s']:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
