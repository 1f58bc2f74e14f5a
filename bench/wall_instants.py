#!/usr/bin/env python3
"""Benchmark: where wall mode's reading of prodcons's waiting departs from the
program's own clock, split into its two possible causes.

    .venv/bin/python bench/wall_instants.py [--runs 5] [--messages 240000] [--quiet 0.05]

bench/offcpu_agreement.py compares wall mode's share of the consumers' waiting with the
program's total. Here the program also logs every wait's start and end
(examples/bin/prodcons-measured with PRODCONS_WAIT_LOG), so each thread in each
snapshot can be checked against what the program itself says it was doing at that
instant. The difference tool - clock is then the sum of:

- the instants' bias (instants - clock): the share of (snapshot, consumer) pairs the
  program logs as waiting, against its waiting over its whole life. Poisson instants
  see time averages, so this is sampling noise (the binomial error is printed) unless
  the snapshots fall at times unlike the rest of the run;
- the labels' error (tool - instants): the share perfsleuth labels mutex or condvar
  waiting (wall mode's own parse and classification, collect/wall.py), against the
  share the program logs at the same instants.

The snapshotter is wallsnap itself, started as `perfsleuth record --mode wall` starts
it (the program held until it is attached), at 50 snapshots/s. Each round also runs
the program alone, so the perturbation (its waiting under the snapshots against its
waiting alone) is printed too. `--quiet X` runs each measurement only after 2 s in
which other processes used under X of a CPU, and runs it again if they used more
meanwhile: on a shared machine, the only way to measure a quiet machine's numbers.
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from offcpu_agreement import GLIBC_INTERNAL_LOCK, PROGRAM, truth_of  # noqa: E402

from perfsleuth.collect import wallsnap  # noqa: E402
from perfsleuth.collect.target import Target  # noqa: E402
from perfsleuth.collect.wall import from_wallsnap, thread_samples  # noqa: E402

RATE_HZ = 50
WAITING = ("mutex", "condvar")
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass
class WaitLog:
    """The consumers' lives and waits, as the program logged them."""

    lives: dict[int, tuple[int, int]]
    starts: dict[int, list[int]]
    ends: dict[int, list[int]]

    @classmethod
    def read(cls, path: Path) -> WaitLog:
        lives: dict[int, tuple[int, int]] = {}
        spans: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
        for line in path.read_text().splitlines():
            fields = line.split()
            if fields[0] == "L":
                lives[int(fields[1])] = (int(fields[2]), int(fields[3]))
            else:
                spans[int(fields[0])].append((int(fields[1]), int(fields[2])))
        ordered = {tid: sorted(s) for tid, s in spans.items()}
        return cls(
            lives,
            {tid: [a for a, _ in s] for tid, s in ordered.items()},
            {tid: [b for _, b in s] for tid, s in ordered.items()},
        )

    def share(self) -> float:
        spans = (zip(self.starts[t], self.ends[t], strict=True) for t in self.starts)
        waited = sum(b - a for pairs in spans for a, b in pairs)
        return waited / sum(b - a for a, b in self.lives.values())

    def alive(self, tid: int, at: int) -> bool:
        return tid in self.lives and self.lives[tid][0] <= at < self.lives[tid][1]

    def waiting(self, tid: int, at: int) -> bool:
        i = bisect.bisect_right(self.starts.get(tid, []), at) - 1
        return i >= 0 and at < self.ends[tid][i]


@dataclass
class Round:
    alone: float  # the program's waiting, run alone
    clock: float  # its waiting under the snapshots, by its own clock
    pairs: Counter  # (logged waiting, labelled waiting) -> consumer samples


def busy_cpu_s() -> float:
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) * TICK_S  # all but idle and iowait


def children_cpu_s() -> float:
    t = os.times()
    return t.children_user + t.children_system


def others_cpus(measure) -> tuple[object, float]:
    """measure()'s result and the CPUs other processes kept busy meanwhile."""
    busy, own, started = busy_cpu_s(), children_cpu_s(), time.monotonic()
    result = measure()
    others = busy_cpu_s() - busy - (children_cpu_s() - own)
    return result, others / (time.monotonic() - started)


def quietly(measure, quiet: float | None):
    """measure() in a window where others used under `quiet` CPUs, before and during."""
    while True:
        if quiet is not None:
            while others_cpus(lambda: time.sleep(2))[1] >= quiet:
                pass
        result, others = others_cpus(measure)
        if quiet is None or others < quiet:
            return result
        print(f"  others used {others:.2f} CPUs meanwhile: measured again", flush=True)


@contextmanager
def silenced():
    """The program's stdout and stderr (its summary lines) into /dev/null: it inherits
    them from us when launched as perfsleuth launches it."""
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


def alone(messages: int) -> float:
    proc = subprocess.run([str(PROGRAM), str(messages)], capture_output=True, text=True, check=True)
    waited, lived = truth_of(proc.stderr)
    return waited / lived


def snapshotted(messages: int, work: Path) -> tuple[float, Counter]:
    log = work / "waits.txt"
    os.environ["PRODCONS_WAIT_LOG"] = str(log)
    with silenced():
        target = Target.launch([str(PROGRAM), str(messages)])
    tool = wallsnap.binary()
    if tool is None:
        raise SystemExit("wallsnap cannot be built here (a C compiler and libdw-dev)")
    snapper = wallsnap.Snapshotter(tool, target.pid, RATE_HZ, work / "wallsnap.txt")
    target.release()
    try:
        target.wait(None, tick=snapper.check, interval=0.05)
    finally:
        text = snapper.stop()
    del os.environ["PRODCONS_WAIT_LOG"]
    waits = WaitLog.read(log)
    return waits.share(), compare(waits, text)


def compare(waits: WaitLog, text: str) -> Counter:
    """(logged waiting, labelled waiting) of each consumer in each snapshot."""
    pairs: Counter = Counter()
    for sample in thread_samples(from_wallsnap(text, RATE_HZ)):
        tid, at = sample.thread.tid, sample.snapshot.time_ns
        if not waits.alive(tid, at):
            continue
        internal = any(GLIBC_INTERNAL_LOCK in f.function for f in sample.frames)
        labelled = sample.state in WAITING and not internal
        pairs[(waits.waiting(tid, at), labelled)] += 1
    return pairs


def one_round(messages: int, quiet: float | None) -> Round:
    plain = quietly(lambda: alone(messages), quiet)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-instants.") as work:
        clock, pairs = quietly(lambda: snapshotted(messages, Path(work)), quiet)
    return Round(plain, clock, pairs)


def shares(pairs: Counter) -> tuple[float, float, int]:
    n = sum(pairs.values())
    logged = sum(v for (w, _), v in pairs.items() if w) / n
    labelled = sum(v for (_, lab), v in pairs.items() if lab) / n
    return logged, labelled, n


def report(rounds: list[Round]) -> None:
    print(f"\n{'run':>4s} {'alone':>7s} {'clock':>7s} {'instants':>9s} {'tool':>7s}  disagreements")
    total: Counter = Counter()
    for i, r in enumerate(rounds, 1):
        logged, labelled, n = shares(r.pairs)
        total += r.pairs
        missed, extra = r.pairs[(True, False)], r.pairs[(False, True)]
        print(
            f"{i:4d} {100 * r.alone:6.1f}% {100 * r.clock:6.1f}% {100 * logged:8.1f}% "
            f"{100 * labelled:6.1f}%  {extra} labelled waiting, {missed} not, of {n}"
        )
    logged, labelled, n = shares(total)
    clock = statistics.mean(r.clock for r in rounds)
    plain = statistics.mean(r.alone for r in rounds)
    error = 100 * math.sqrt(logged * (1 - logged) / n)
    print(f"\nall runs: {n} consumer samples")
    print(f"  perturbation  clock - alone     {100 * (clock - plain):+5.1f} points")
    print(
        f"  instants      instants - clock  {100 * (logged - clock):+5.1f} points",
        f"(sampling error {error:.1f})",
    )
    print(f"  labels        tool - instants   {100 * (labelled - logged):+5.1f} points")
    print(f"  wall mode     tool - clock      {100 * (labelled - clock):+5.1f} points")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=240000)
    parser.add_argument("--quiet", type=float, default=None, help="others' CPUs at most")
    args = parser.parse_args()
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "examples"), "bin/prodcons-measured"], check=True
    )
    rounds = []
    for i in range(args.runs):
        rounds.append(one_round(args.messages, args.quiet))
        r = rounds[-1]
        logged, labelled, _ = shares(r.pairs)
        print(
            f"  run {i + 1}: alone {100 * r.alone:.1f}%, clock {100 * r.clock:.1f}%, "
            f"instants {100 * logged:.1f}%, tool {100 * labelled:.1f}%",
            flush=True,
        )
    report(rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
