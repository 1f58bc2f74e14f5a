#!/usr/bin/env python3
"""Benchmark: what address translation costs a random chase over P pages of a
program's own 4 KiB frames, against the reach `perfsleuth cache calibrate` measures.

    .venv/bin/python bench/tlb_walks.py [--sweeps 9] [--pairs 80]

Why: the C++ maps' TLB knees (bench/cache_cliff.py, `--tlb-sweep`) came at ~2,000
pages on this AMD EPYC KVM guest where the calibration's chase over P virtual pages of
one physical page (chase_aliased_ns) puts the reach at 3,113; and those knees moved
with the window they were fitted in. This measures the translation cost alone on
distinct frames: one line at a fixed random offset in each of P pages, on 4 KiB pages
at the frames the kernel gives and on 2 MiB pages, timed in alternate rounds ~0.1 ms
apart (perfsleuth_native.chase_walks_ns; the lines are the same, so the paired
difference is what the 4 KiB translations add). P from 128 to 8,192 pages (the lines
stay within the 1 MiB L2), four sizes per doubling, `--sweeps` sweeps; per P the
median over the sweeps of each sweep's median paired difference.

Prints, per P, the fastest 4 KiB and 2 MiB rounds, the median difference and the
aliased chase's ns per load; the onset (the smallest P from which the median
difference stays above ONSET_NS); and the knee (knee.py, the calibration's and the
bench's estimator) of the difference over windows from 128 pages to several tops:
a curve whose knee follows the window's top has no knee of its own. Writes
bench/out/tlb_walks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

from perfsleuth.cpu_cache_projections import calibrate
from perfsleuth.cpu_cache_projections.knee import knee

OUT = Path(__file__).resolve().parent / "out"
SIZES = [round(128 * 2 ** (i / 4)) for i in range(4 * 6 + 1)]  # 128 .. 8,192 pages
TOPS = (2896, 4096, 5793, 8192)
ONSET_NS = 0.5  # a page walk that hits the caches costs ~10 ns: 5% of the loads walking
STEPS = 4000
ALIASED_ROUNDS = 10


def sweep(chase: object, pairs: int, seed: int) -> dict[int, list[float]]:
    """Per P: [fastest 4 KiB, fastest 2 MiB, median paired difference, aliased]."""
    return {
        pages: [
            *chase.chase_walks_ns(pages, STEPS, pairs, seed),  # type: ignore[attr-defined]
            chase.chase_aliased_ns(pages, STEPS, ALIASED_ROUNDS),  # type: ignore[attr-defined]
        ]
        for pages in SIZES
    }


def onset(difference: dict[int, float]) -> int | None:
    """The smallest P from which the difference stays above ONSET_NS."""
    above = [
        p for p in sorted(difference) if all(difference[q] > ONSET_NS for q in difference if q >= p)
    ]
    return above[0] if above else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=9)
    parser.add_argument("--pairs", type=int, default=80)
    args = parser.parse_args()
    chase = calibrate.native()
    load = {"start": os.getloadavg()}
    sweeps = [sweep(chase, args.pairs, 0x9E3779B97F4A7C15 + i) for i in range(args.sweeps)]
    load["end"] = os.getloadavg()
    difference = {p: statistics.median(s[p][2] for s in sweeps) for p in SIZES}
    print(f"load average (1, 5, 15 min) at the start {load['start']}, at the end {load['end']}")
    print(f"{args.sweeps} sweeps of {args.pairs} pairs of {STEPS}-load rounds a size\n")
    print("| pages | 4 KiB, fastest (ns) | 2 MiB, fastest | difference, median | aliased |")
    print("| --- | --- | --- | --- | --- |")
    for p in SIZES:
        small, huge = (min(s[p][i] for s in sweeps) for i in (0, 1))
        aliased = min(s[p][3] for s in sweeps)
        print(f"| {p:,} | {small:.2f} | {huge:.2f} | {difference[p]:.2f} | {aliased:.2f} |")
    first = onset(difference)
    print(f"\nonset (the difference above {ONSET_NS} ns from there on): {first or 0:,} pages")
    knees = {top: knee([(float(p), y) for p, y in difference.items() if p <= top]) for top in TOPS}
    print("knee of the difference, window 128 to " + ", ".join(
        f"{top:,}: {k or 0:,.0f}" for top, k in knees.items()))  # fmt: skip
    each = sorted(round(knee([(float(p), s[p][2]) for p in SIZES]) or 0) for s in sweeps)
    print(f"each sweep's knee over 128 to {SIZES[-1]:,}: {', '.join(f'{k:,}' for k in each)}")
    aliased_curve = [(float(p), min(s[p][3] for s in sweeps)) for p in SIZES]
    print(f"knee of the aliased chase's fastest: {knee(aliased_curve) or 0:,.0f} pages")
    OUT.mkdir(parents=True, exist_ok=True)
    kept = {"load": load, "pairs": args.pairs, "steps": STEPS, "sweeps": sweeps}
    (OUT / "tlb_walks.json").write_text(json.dumps(kept, indent=1))


if __name__ == "__main__":
    main()
