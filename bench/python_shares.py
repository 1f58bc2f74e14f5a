"""Shares of a script's hot Python functions in python mode, beside py-spy's own record of
the same process and the script's own timers, on each interpreter given.

For each interpreter: starts examples/python/timed_pair.py held before its work, attaches
`py-spy record --nonblocking --format raw --rate 1000` (py-spy alone, as a user would run
it) and `perfsleuth record --freq 499 --pid` to it, and lets the work begin once both
are reading it; both then record until it exits. So the two see the same work, and the
timers time exactly it (an earlier version attached both for a fixed time to a running
loop: perfsleuth, whose start-up is a Python program's, began up to a second after
py-spy, and at load 10-20 a second is a few of the script's crunch/spell rounds: 8-15
points between the two that were the windows', not the profilers'). Prints each
function's share of main in perfsleuth's `top --total`, in py-spy's raw samples, and by
the script's timers, and the largest gap to py-spy; with --rounds N, each round and the
largest gap over them.

Usage: .venv/bin/python bench/python_shares.py [--seconds 3] [--rounds 1] PYTHON...
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
STANDALONE = "standalone-3.10/bin/python3.10"


def default_pythons() -> list[str]:
    found = ["/usr/bin/python3.11"]
    found += [str(ROOT / ".venv/pythons" / p) for p in ("shared-3.11/bin/python3.11", STANDALONE)]
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


# runs the script (argv: SCRIPT SECONDS GO) once the file GO exists
HELD = (
    "import os, runpy, sys, time\n"
    "go = sys.argv.pop()\n"
    "sys.argv = sys.argv[1:]\n"
    "while not os.path.exists(go):\n"
    "    time.sleep(0.01)\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
# py-spy's first samples of a process come 20-300 ms after it starts reading it
SETTLE_S = 1.5


def attached(pid: int) -> bool:
    """Both py-spys (ours and perfsleuth's) and perfsleuth's perf have PID open."""
    found = Counter()
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(pid).encode() in argv and argv[0]:
            found[Path(argv[0].decode()).name] += 1
    return found["py-spy"] >= 2 and found["perf"] >= 1


def measure(python: str, seconds: int, tmp: Path) -> dict[str, dict[str, float]]:
    go = tmp / "go"
    script = subprocess.Popen(
        [python, "-c", HELD, str(SCRIPT), str(seconds), str(go)], stdout=subprocess.PIPE, text=True
    )
    raw, store = tmp / "py-spy.txt", tmp / "store"
    spy_argv = [PY_SPY, "record", "--nonblocking", "--format", "raw", "--rate", "1000"]
    spy = subprocess.Popen(
        [*spy_argv, "-o", str(raw), "--pid", str(script.pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    record = [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(store)]
    record += ["--freq", "499", "--pid", str(script.pid), "--duration", "600"]
    perfsleuth = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not attached(script.pid):
        time.sleep(0.05)
    time.sleep(SETTLE_S)
    go.touch()
    out, _ = script.communicate()
    spy.wait()
    _, err = perfsleuth.communicate()
    if perfsleuth.returncode:
        raise SystemExit(f"perfsleuth record failed: {err.decode()}")
    spent = json.loads(out.strip().splitlines()[-1])
    return {
        "perfsleuth": perfsleuth_shares(store),
        "py-spy": py_spy_shares(raw),
        "timers": {name: spent[name] / spent["user"] for name in HOT},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="of user CPU in the work")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("pythons", nargs="*")
    args = parser.parse_args()
    for python in args.pythons or default_pythons():
        gaps = []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                got = measure(python, args.seconds, Path(tmp))
            gaps.append(max(abs(got["perfsleuth"][n] - got["py-spy"][n]) for n in HOT))
            shown = "  ".join(
                f"{name} {got['perfsleuth'][name]:.3f}/{got['py-spy'][name]:.3f}/"
                f"{got['timers'][name]:.3f}"
                for name in HOT
            )
            print(f"{python}: perfsleuth/py-spy/timers {shown}; gap to py-spy {gaps[-1]:.3f}")
        if args.rounds > 1:
            print(f"{python}: largest gap to py-spy over {args.rounds} rounds {max(gaps):.3f}")


if __name__ == "__main__":
    main()
