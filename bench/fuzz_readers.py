"""Fuzz the readers for N minutes: tests/unit/test_readers_fuzz.py, rounds of many inputs.

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

TESTS = Path(__file__).resolve().parents[1] / "tests" / "unit" / "test_readers_fuzz.py"
# test_mutated_seeds and test_any_bytes run per reader: inputs per round = examples x this.
CASES = 9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--examples-per-round", type=int, default=2000)
    args = parser.parse_args()
    env = {**os.environ, "PERFSLEUTH_FUZZ_EXAMPLES": str(args.examples_per_round)}
    end = time.monotonic() + args.minutes * 60
    rounds = 0
    while time.monotonic() < end:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", str(TESTS)], env=env)
        if done.returncode:
            return done.returncode
        rounds += 1
        print(f"round {rounds}: {rounds * args.examples_per_round * CASES:,} inputs, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
