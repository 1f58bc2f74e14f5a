"""Fuzz the readers for N minutes: rounds of many inputs through
tests/unit/test_readers_fuzz.py (the text and pprof readers) and
tests/integration/test_perf_data_fuzz.py (the native perf.data reader and perf script's).

    .venv/bin/python bench/fuzz_readers.py --minutes 10 [--examples-per-round 2000]

Every round draws new inputs (Hypothesis keeps failures in .hypothesis/ and replays
them first). Prints the rounds and inputs run; exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    ROOT / "tests" / "unit" / "test_readers_fuzz.py",
    ROOT / "tests" / "integration" / "test_perf_data_fuzz.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--examples-per-round", type=int, default=2000)
    args = parser.parse_args()
    env = {**os.environ, "PERFSLEUTH_FUZZ_EXAMPLES": str(args.examples_per_round)}
    end = time.monotonic() + args.minutes * 60
    rounds = 0
    while time.monotonic() < end:
        argv = [sys.executable, "-m", "pytest", "-q", "-x", *map(str, TESTS)]
        done = subprocess.run(argv, env=env)
        if done.returncode:
            return done.returncode
        rounds += 1
        print(f"round {rounds}: {args.examples_per_round:,} inputs per fuzz case, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
