#!/usr/bin/env python3
"""Benchmark: CPU time of a perfsleuth command's start (`CMD --help`), every command.

    .venv/bin/python bench/cli_startup.py [--runs 5]

Runs `python -m perfsleuth.cli CMD --help` for every registered command (and plain
`--help`), interleaved, --runs times, and prints the median CPU time (user + system,
of the child, from getrusage) of each: imports and argument parsing, which every
invocation of that command pays before it does anything. CPU time, not wall: the
machine is shared and loaded. The reference rows are a bare `python -c pass` and
`perf --help` (the tool perfsleuth's recorders wrap). Target: every command under
0.3 CPU-s (issue 29). `python -X importtime -m perfsleuth.cli CMD --help` shows
where a slow one spends it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3


def cpu_seconds(cmd: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands() -> dict[str, list[str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from perfsleuth.commands import COMMANDS

    python = [sys.executable, "-m", "perfsleuth.cli"]
    out = {"(perfsleuth --help)": [*python, "--help"]}
    out.update({name: [*python, name, "--help"] for name in COMMANDS})
    out["fleet top"] = [*python, "fleet", "top", "--help"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env_path = str(ROOT / "src")
    os.environ["PYTHONPATH"] = env_path + os.pathsep + os.environ.get("PYTHONPATH", "")
    cases = commands()
    cases["python -c pass"] = [sys.executable, "-c", "pass"]
    cases["perf --help"] = ["perf", "--help"]
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, cmd in cases.items():
            times[name].append(cpu_seconds(cmd))
    print(f"load {os.getloadavg()[0]:.1f}; median CPU seconds of {args.runs} interleaved runs")
    slowest = 0.0
    for name, got in times.items():
        median = statistics.median(got)
        ours = not name.startswith(("python -c", "perf --"))
        slowest = max(slowest, median) if ours else slowest
        mark = "  over target" if ours and median > TARGET_S else ""
        print(f"  {name:24} {median:6.3f}{mark}")
    print(f"slowest perfsleuth command: {slowest:.3f} CPU-s (target {TARGET_S})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
