"""Shares of a script's hot Python functions in python mode, beside py-spy's own record of
the same process and the script's own timers, on each interpreter given.

For each interpreter: starts examples/python/timed_pair.py (crunch and spell time their
own user CPU), and over the same seconds of it runs `py-spy record --nonblocking --format
raw` (py-spy alone, as a user would run it) and `perfsleuth record --pid` side by side;
prints each function's share of main in perfsleuth's `top --total`, in py-spy's raw
samples, and by the script's timers (its whole run), and the largest gap to py-spy.

Usage: .venv/bin/python bench/python_shares.py [--seconds 4] PYTHON...
(default: Debian's python3.11 and the interpreters of .venv/pythons/, then pyenv's 3.9 to
3.13 where installed)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "python" / "timed_pair.py"
PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
HOT = ("crunch", "spell")
PYENV = Path.home() / ".pyenv" / "versions"


def default_pythons() -> list[str]:
    found = ["/usr/bin/python3.11", str(ROOT / ".venv/pythons/shared-3.11/bin/python3.11")]
    for minor in ("3.9", "3.10", "3.11", "3.12", "3.13"):
        found += [str(p) for p in sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))[-1:]]
    return [p for p in found if Path(p).exists()]


def py_spy_shares(raw: Path) -> dict[str, float]:
    """Each function's samples over main's, in py-spy's raw stacks."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        names = {f.rpartition(" (")[0] for f in stack.split(";") if "timed_pair.py:" in f}
        for name in names:
            counts[name] += int(count)
    return {name: counts[name] / counts["main"] for name in HOT}


def perfsleuth_shares(store: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "perfsleuth.cli", "top", "--store", str(store), "--total"]
    done = subprocess.run([*argv, "--format", "json", "-n", "500"], capture_output=True, text=True)
    rows = {r["function"]: r["total"] for r in json.loads(done.stdout)["rows"]}
    return {name: rows[name] / rows["main"] for name in HOT}


def measure(python: str, seconds: int, tmp: Path) -> dict[str, dict[str, float]]:
    script = subprocess.Popen(
        [python, str(SCRIPT), str(seconds + 4)], stdout=subprocess.PIPE, text=True
    )
    time.sleep(1.0)
    raw, store = tmp / "py-spy.txt", tmp / "store"
    spy_argv = [PY_SPY, "record", "--nonblocking", "--format", "raw", "--rate", "1000"]
    spy = subprocess.Popen(
        [*spy_argv, "--duration", str(seconds), "-o", str(raw), "--pid", str(script.pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    record = [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(store)]
    record += ["--freq", "499", "--pid", str(script.pid), "--duration", str(seconds)]
    subprocess.run(record, capture_output=True, check=True)
    spy.wait()
    out, _ = script.communicate()
    spent = json.loads(out.strip().splitlines()[-1])
    return {
        "perfsleuth": perfsleuth_shares(store),
        "py-spy": py_spy_shares(raw),
        "timers": {name: spent[name] / spent["user"] for name in HOT},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("pythons", nargs="*")
    args = parser.parse_args()
    for python in args.pythons or default_pythons():
        with tempfile.TemporaryDirectory() as tmp:
            got = measure(python, args.seconds, Path(tmp))
        gap = max(abs(got["perfsleuth"][n] - got["py-spy"][n]) for n in HOT)
        shown = "  ".join(
            f"{name} {got['perfsleuth'][name]:.3f}/{got['py-spy'][name]:.3f}/"
            f"{got['timers'][name]:.3f}"
            for name in HOT
        )
        print(f"{python}: perfsleuth/py-spy/timers {shown}; largest gap to py-spy {gap:.3f}")


if __name__ == "__main__":
    main()
