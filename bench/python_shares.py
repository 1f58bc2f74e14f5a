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
largest gap over them. With --keep DIR, each round's recording is kept in its own folder
of DIR (perf script's text, py-spy's trace of perfsleuth's run, its origin and slack in
run.json, the timers and py-spy's own raw record): what the splice read, to splice again
(tests/unit/test_python_splice.py's fixtures are such recordings); and each call of crunch
and spell, its start and end on CLOCK_MONOTONIC (perf's clock here) in turns.json: which
function each perf sample was truly in (the calls go through a wrapper, `timed`, for it).

Usage: .venv/bin/python bench/python_shares.py [--seconds 3] [--rounds 1] [--keep DIR] PYTHON...
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
# as HELD, then writes each call of crunch and spell (name, start, end) to argv's TURNS
HELD_TIMED = (
    "import json, os, runpy, sys, time\n"
    "script, seconds, go, out = sys.argv[1:]\n"
    "main = runpy.run_path(script, run_name='timed_pair')['main']\n"
    "calls = []\n"
    "def timing(work):\n"
    "    def timed(n):\n"
    "        start = time.monotonic()\n"
    "        work(n)\n"
    "        calls.append((work.__name__, start, time.monotonic()))\n"
    "    return timed\n"
    "for name in ('crunch', 'spell'):\n"
    "    main.__globals__[name] = timing(main.__globals__[name])\n"
    "while not os.path.exists(go):\n"
    "    time.sleep(0.01)\n"
    "print(json.dumps(main(float(seconds))))\n"
    "open(out, 'w').write(json.dumps(calls))\n"
)
# `perfsleuth record ...` (argv: KEEP record ...) keeping what the splice reads in KEEP
KEEPING = (
    "import json, shutil, sys\n"
    "from pathlib import Path\n"
    "from perfsleuth import cli\n"
    "from perfsleuth.collect import python_perf\n"
    "keep = Path(sys.argv.pop(1))\n"
    "spliced = python_perf._spliced\n"
    "def keeping(run, workdir, rate):\n"
    "    try:\n"
    "        return spliced(run, workdir, rate)\n"
    "    finally:\n"
    "        shutil.copy(workdir / 'perf.txt', keep / 'perf-script.txt')\n"
    "        shutil.copy(run.spy.out, keep / 'chrometrace.json')\n"
    "        facts = {'origin': run.origin, 'slack': run.slack, 'pid': run.pid}\n"
    "        (keep / 'run.json').write_text(json.dumps(facts))\n"
    "python_perf._spliced = keeping\n"
    "sys.exit(cli.main())\n"
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


def measure(python: str, seconds: int, tmp: Path, keep: Path | None) -> dict[str, dict[str, float]]:
    go = tmp / "go"
    held = (
        [HELD_TIMED, str(SCRIPT), str(seconds), str(go), str(keep / "turns.json")] if keep else []
    )
    held = held or [HELD, str(SCRIPT), str(seconds), str(go)]
    script = subprocess.Popen([python, "-c", *held], stdout=subprocess.PIPE, text=True)
    raw, store = tmp / "py-spy.txt", tmp / "store"
    spy_argv = [PY_SPY, "record", "--nonblocking", "--format", "raw", "--rate", "1000"]
    spy = subprocess.Popen(
        [*spy_argv, "-o", str(raw), "--pid", str(script.pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    runner = ["-c", KEEPING, str(keep)] if keep else ["-m", "perfsleuth.cli"]
    record = [sys.executable, *runner, "record", "--store", str(store)]
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
    if keep:
        (keep / "timers.json").write_text(json.dumps(spent))
        shutil.copy(raw, keep / "py-spy.txt")
    return {
        "perfsleuth": perfsleuth_shares(store),
        "py-spy": py_spy_shares(raw),
        "timers": {name: spent[name] / spent["user"] for name in HOT},
    }


def kept_name(python: str) -> str:
    """A folder name for the interpreter: its path's parts below the home or the tree."""
    parts = Path(python).parts
    return "_".join(p for p in parts[-4:] if p not in ("/", "bin", "versions", "pythons"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="of user CPU in the work")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep each round's recording in this folder")
    parser.add_argument("pythons", nargs="*")
    args = parser.parse_args()
    for python in args.pythons or default_pythons():
        gaps = []
        for round_ in range(args.rounds):
            keep = args.keep / f"{kept_name(python)}-{round_}" if args.keep else None
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory() as tmp:
                got = measure(python, args.seconds, Path(tmp), keep)
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
