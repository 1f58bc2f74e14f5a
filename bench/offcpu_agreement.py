#!/usr/bin/env python3
"""Benchmark: the consumers' waiting as perfsleuth and pt-pmp read it, against the
program's own clock (issue 29: within 2 points).

    .venv/bin/python bench/offcpu_agreement.py [--runs 3] [--messages 60000] [--load 0]

examples/bin/prodcons-measured (one producer, three consumers on a std::mutex +
std::condition_variable + std::list) times every consumer's lock and condition-variable
wait and prints the total beside the consumers' lifetime: the truth. Each round runs it
under `perfsleuth record --mode all`, `--mode wall`, `--mode offcpu` and under real
pt-pmp (percona-toolkit: gdb `thread apply all bt` in a loop, aggregated by pt-pmp
itself), interleaved, and reads the consumers' waiting share from each:

- perfsleuth: the consumer threads' mutex + condvar time over all their time (glibc's
  internal malloc-arena lock left out: the program does not time it); `offcpu` has no
  on-CPU time, so its waiting is divided by the consumers' lifetime the program gives.
- pt-pmp: the share of the started threads' stacks (the consumers; main is the
  producer) that are in a lock or condition-variable wait.

Prints per tool the median of |tool - program| in points and the worst run, and the
program's slowdown under it: the consumers' median lifetime against that of plain runs
of the program (`none`) in the same rounds. `--load N` keeps N busy loops running beside
(the loaded machine the issue measured on); `--wall-freq` is wall mode's snapshot rate.
Each wall run also prints its sampling error alone (a binomial standard error over the
consumers' samples): a sampler right at every instant still misses by that much, so
`--messages 240000` (4x the samples) is what tells a bias of 1-2 points from noise.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "bin" / "prodcons-measured"
PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
TRUTH = re.compile(r"consumers waited (\d+) ns of (\d+) ns")
GLIBC_INTERNAL_LOCK = "lll_lock_wait_private"
PT_PMP_WAITS = ("pthread_cond_wait", "__lll_lock_wait", "pthread_mutex_lock")
# pt-pmp's awk cuts "(anonymous namespace)::consumer" at the space: the consumers are
# the stacks of threads the program started (main is the producer).
PT_PMP_WORKER = "start_thread"
TARGET_POINTS = 2.0
MODES = ("all", "wall", "offcpu")
PLAIN = "none"  # the program alone: the lifetime slowdowns are measured against


def truth_of(stderr: str) -> tuple[float, float]:
    """(waited ns, lived ns) of the consumers, as the program printed them."""
    found = TRUTH.search(stderr)
    if not found:
        raise SystemExit(f"no measurement from the program:\n{stderr[-2000:]}")
    return float(found[1]), float(found[2])


def perfsleuth_reading(store_dir: Path, mode: str, lived_ns: float) -> float:
    sys.path.insert(0, str(ROOT / "src"))
    from perfsleuth.store.runs import Store

    store = Store(store_dir / ".perfsleuth")
    profile = store.load(store.resolve("latest"))
    main_tids = {t.tid for t in profile.threads if t.tid == t.pid}
    waited = total = 0.0
    samples = 0
    for stack, weight, count, t, state in profile.rows():
        if t < 0 or profile.threads[t].tid in main_tids:
            continue
        total += weight
        samples += count
        names = (profile.frames[f].function for f in stack)
        if state in ("mutex", "condvar") and not any(GLIBC_INTERNAL_LOCK in n for n in names):
            waited += weight
    share = waited / (lived_ns if mode == "offcpu" else total)
    if mode == "wall":
        print(f"  wall: {samples} consumer samples, {sampling_error(share, samples):.1f} points")
    return share


def sampling_error(share: float, samples: int) -> float:
    """The standard error of a share read from this many independent samples, in
    points: what a sampler right at every instant still misses by (wall mode at 50
    snapshots/s on 60,000 messages: ~60 snapshots of 3 consumers, ~3 points)."""
    return 100 * math.sqrt(share * (1 - share) / max(samples, 1))


Reading = tuple[float, float, float]  # program's share, tool's share, consumers' ns lived


def run_plain(messages: int) -> Reading:
    proc = subprocess.run([str(PROGRAM), str(messages)], capture_output=True, text=True, check=True)
    waited, lived = truth_of(proc.stderr)
    return waited / lived, waited / lived, lived


def run_perfsleuth(mode: str, messages: int, wall_freq: int) -> Reading:
    """(program's share, perfsleuth's share, lived) of one recorded run."""
    with tempfile.TemporaryDirectory(prefix="perfsleuth-agree.") as work:
        freq = ["--freq", str(wall_freq)] if mode == "wall" else []
        cmd = [str(PERFSLEUTH), "record", "--mode", mode, *freq, "--", str(PROGRAM), str(messages)]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"perfsleuth record --mode {mode} failed:\n{proc.stderr[-2000:]}")
        waited, lived = truth_of(proc.stderr)
        return waited / lived, perfsleuth_reading(Path(work), mode, lived), lived


def run_pt_pmp(messages: int) -> Reading:
    """(program's share, pt-pmp's share, lived): pt-pmp samples until the program
    exits, then aggregates its own saved samples."""
    with tempfile.TemporaryDirectory(prefix="perfsleuth-ptpmp.") as work:
        samples = Path(work) / "samples"
        program = subprocess.Popen(
            [str(PROGRAM), str(messages)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        pmp = subprocess.Popen(
            [
                "pt-pmp",
                "--pid",
                str(program.pid),
                "--iterations",
                "100000",
                "--interval",
                "0",
                "--save-samples",
                str(samples),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _out, err = program.communicate()
        os.killpg(pmp.pid, signal.SIGTERM)
        pmp.wait()
        waited, lived = truth_of(err)
        aggregated = subprocess.run(
            ["pt-pmp", str(samples)], capture_output=True, text=True, check=True
        ).stdout
        return waited / lived, pt_pmp_share(aggregated), lived


def pt_pmp_share(aggregated: str) -> float:
    """Waiting share of the consumers' stacks in pt-pmp's `COUNT f1,f2,...` lines."""
    waiting = consumers = 0
    for line in aggregated.splitlines():
        count, _, stack = line.strip().partition(" ")
        if not count.isdigit() or PT_PMP_WORKER not in stack:
            continue
        consumers += int(count)
        if any(w in stack for w in PT_PMP_WAITS) and GLIBC_INTERNAL_LOCK not in stack:
            waiting += int(count)
    if consumers == 0:
        raise SystemExit(f"pt-pmp saw no consumer stacks:\n{aggregated[:2000]}")
    return waiting / consumers


def start_load(n: int) -> list[subprocess.Popen]:
    spin = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=60000)
    parser.add_argument("--load", type=int, default=0, help="busy loops running beside")
    parser.add_argument("--tools", default="all,wall,offcpu,pt-pmp")
    parser.add_argument("--wall-freq", type=int, default=50, help="wall mode's snapshots/s")
    args = parser.parse_args()
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "examples"), "bin/prodcons-measured"], check=True
    )
    tools = [PLAIN, *args.tools.split(",")]
    readings: dict[str, list[Reading]] = {tool: [] for tool in tools}
    load = start_load(args.load)
    try:
        for _ in range(args.runs):
            for tool in tools:
                started = time.monotonic()
                reading = run_tool(tool, args.messages, args.wall_freq)
                readings[tool].append(reading)
                print(
                    f"  {tool:7s} program {100 * reading[0]:5.1f}%  tool {100 * reading[1]:5.1f}%"
                    f"  ({time.monotonic() - started:.1f} s)",
                    flush=True,
                )
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    report(readings, args)
    return 0


def run_tool(tool: str, messages: int, wall_freq: int) -> Reading:
    if tool == PLAIN:
        return run_plain(messages)
    if tool == "pt-pmp":
        return run_pt_pmp(messages)
    return run_perfsleuth(tool, messages, wall_freq)


def report(readings: dict[str, list[Reading]], args: argparse.Namespace) -> None:
    plain = statistics.median(lived for _t, _s, lived in readings[PLAIN])
    print(f"\nconsumers' waiting vs the program's own clock, {args.runs} runs, load +{args.load}")
    print(
        f"{'tool':10s} {'median |diff|':>14s} {'worst':>8s} {'signed median':>14s} {'slowdown':>9s}"
    )
    for tool, runs in readings.items():
        if tool == PLAIN:
            continue
        diffs = [100 * (seen - truth) for truth, seen, _lived in runs]
        slowdown = statistics.median(lived for _t, _s, lived in runs) / plain
        print(
            f"{tool:10s} {statistics.median(abs(d) for d in diffs):11.1f} pt"
            f" {max(diffs, key=abs):+6.1f}pt {statistics.median(diffs):+11.1f}pt {slowdown:8.2f}x"
        )
    print(f"target: within {TARGET_POINTS} points; slowdown: the consumers' median lifetime")
    print(f"against plain runs of the program; wall mode at {args.wall_freq} snapshots/s")


if __name__ == "__main__":
    sys.exit(main())
