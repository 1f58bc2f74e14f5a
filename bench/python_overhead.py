"""Slowdown of a Python workload under `perfsleuth record` (python mode), beside py-spy alone.

Runs examples/python/json_heavy.py N times each way, interleaved: plain; under
`py-spy record --native` at the rate (py-spy's mixed stacks, the way python mode
used to record, now `--mode python-native`); under `py-spy record --nonblocking` at
1000 Hz writing a Chrome trace (the Python half of python mode, alone); under
`perfsleuth record` (python mode: perf and that py-spy, spliced); and under
`perfsleuth record --mode python-native`. Prints, each as a median and a slowdown,
the workload's own loop time (it prints it), and the time its run took less the time
it waited for a CPU (/proc/self/schedstat, read by the wrapper that runs it): on a
machine shared with other work the first measures mostly the others' load, the second
keeps what a profiler costs (its interrupts, the process stopped by ptrace, contention)
and leaves out the queueing. Also compares the inclusive shares of
the example's Python functions between the last perfsleuth run and the last
`py-spy --native` run (separate runs, independent samples).

Usage: .venv/bin/python bench/python_overhead.py [--runs 5] [--rate 100] [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "python" / "json_heavy.py"
PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
FUNCTIONS = ("serialize", "parse", "total_quantity")
# runs the script in argv[1:] as __main__ and prints its wall time less its run-queue wait
RAN = """import runpy, sys, time
def waited():
    return int(open("/proc/self/schedstat").read().split()[1]) / 1e9
start, wait = time.perf_counter(), waited()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
print(f"ran {time.perf_counter() - start - (waited() - wait):.4f} s")
"""


def timed(argv: list[str]) -> tuple[float, float]:
    """The workload's own loop time, as it prints it (startup and storing not counted),
    and its run's time less its wait for a CPU."""
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    loop = re.search(r"loop ([0-9.]+) s", done.stdout)
    ran = re.search(r"ran ([0-9.]+) s", done.stdout)
    assert loop and ran, done.stdout
    return float(loop[1]), float(ran[1])


def py_spy_shares(raw: Path) -> dict[str, float]:
    counts: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        for name in {f.rpartition(" (")[0] for f in stack.split(";") if "json_heavy.py:" in f}:
            counts[name] += int(count)
    return {f: counts[f] / total for f in FUNCTIONS}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    workload = [sys.executable, "-c", RAN, str(WORKLOAD), str(args.rounds)]
    with tempfile.TemporaryDirectory() as tmp:
        raw, store = Path(tmp) / "raw.txt", Path(tmp) / "store"
        spy = [PY_SPY, "record", "--threads", "--full-filenames", "--rate"]
        record = [sys.executable, "-m", "perfsleuth.cli", "record", "--freq", str(args.rate)]
        ways = {
            "plain": workload,
            "py-spy --native": [*spy, str(args.rate), "--native", "--format", "raw"]
            + ["-o", str(raw), "--", *workload],
            "py-spy trace": [*spy, "1000", "--nonblocking", "--format", "chrometrace"]
            + ["-o", str(Path(tmp) / "trace.json"), "--", *workload],
            "perfsleuth": [*record, "--store", str(store), "--", *workload],
            "pfs native": [*record, "--store", str(Path(tmp) / "native"), "--mode"]
            + ["python-native", "--", *workload],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(args.runs):
            for name, argv in ways.items():
                times[name].append(timed(argv))
        top = subprocess.run(
            [sys.executable, "-m", "perfsleuth.cli", "top", "--store", str(store), "--total"]
            + ["--format", "json", "-n", "100"],
            check=True,
            capture_output=True,
            text=True,
        )
        ours = {r["function"]: r["total"] for r in json.loads(top.stdout)["rows"]}
        theirs = py_spy_shares(raw)
    print(f"workload: {WORKLOAD.name} {args.rounds}, {args.runs} runs each, {args.rate} Hz")
    print("  loop: its own wall time; ran: the run's wall time less its wait for a CPU;")
    print("  paired: median over the rounds of (ran / plain's ran in the same round); min ran")
    plain = [statistics.median(t[i] for t in times["plain"]) for i in (0, 1)]
    fastest = min(t[1] for t in times["plain"])
    for name, values in times.items():
        loop, ran = (statistics.median(t[i] for t in values) for i in (0, 1))
        paired = statistics.median(t[1] / p[1] for t, p in zip(values, times["plain"], strict=True))
        least = min(t[1] for t in values)
        print(
            f"  {name:16s} loop {loop:6.3f} s {100 * (loop / plain[0] - 1):+6.1f}%"
            f"   ran {ran:6.3f} s {100 * (ran / plain[1] - 1):+6.1f}%"
            f"   paired {100 * (paired - 1):+6.1f}%   min ran {least:6.3f} s"
            f" {100 * (least / fastest - 1):+6.1f}%"
        )
    print("inclusive shares, last perfsleuth run vs last py-spy --native run (separate runs):")
    for f in FUNCTIONS:
        print(f"  {f:15s} perfsleuth {100 * ours.get(f, 0):5.1f}%  py-spy {100 * theirs[f]:5.1f}%")


if __name__ == "__main__":
    main()
