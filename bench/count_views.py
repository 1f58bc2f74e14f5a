#!/usr/bin/env python3
"""Benchmark: views of exact counts — perfsleuth top/annotate/diff vs cg_annotate/cg_diff.

    .venv/bin/python bench/count_views.py [--size 5] [--runs 3] [--before CHECKOUT]

The workload is SQLite's micro-optimisation workflow: speedtest1 built from Debian's
sqlite3 source package (the 250k-line amalgamation, gcc -O2 -g). Done once and kept in
bench/out/speedtest1/: `apt-get source sqlite3` (through a deb-src list of its own,
so the machine's apt setup is left alone; needs tclsh to make the amalgamation),
the build, two count runs (`perfsleuth record --mode count`: --size N and N+1) and
two cachegrind runs of the same commands.

Then, interleaved, --runs times, the CPU time (user + system) and wall time of:

  perfsleuth top            the function table          cg_annotate (its function table
  perfsleuth annotate FUNC  sqlite3VdbeExec's lines       and auto-annotated sources,
  perfsleuth annotate --all every file, 8 lines context   8 lines of context)
  perfsleuth diff A B       every function and line       cg_diff A B (a diff file) and
                            whose count changed           cg_annotate of that file
  perfsleuth diff --format json  the same as one JSON document (for scripts)

and prints the medians and the ratio of each perfsleuth view to its cachegrind tool.
CPU time is the measure: the machine is shared and loaded, so wall time waits.
Every command runs once before the timed rounds (a stored run's files in answers/ are
kept by the first view that asks, as for a user), and Python writes its bytecode caches.
With --before, `top`, `diff` and `diff --format json` of another checkout of perfsleuth
(its src/ first on PYTHONPATH, on a copy of the store: each code keeps its own answers/
files) are timed in the same rounds, so a change is measured against the code before it
on the same load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "speedtest1"
PY = Path(sys.executable)
FUNCTION = "sqlite3VdbeExec"
DEB_SRC = (
    "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian bookworm main\n"
)


def sh(cmd: str, cwd: Path = OUT) -> None:
    subprocess.run(["bash", "-c", cmd], check=True, cwd=cwd)


def speedtest1() -> Path:
    """speedtest1 built from Debian's sqlite3 source, once."""
    exe = OUT / "speedtest1"
    if exe.exists():
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "apt" / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (OUT / "apt" / "sources.list").write_text(DEB_SRC)
    apt = (
        f"-o Dir::Etc::SourceList={OUT}/apt/sources.list -o Dir::Etc::SourceParts=/dev/null "
        f"-o Dir::State::Lists={OUT}/apt/lists"
    )
    sh(f"apt-get -q {apt} update >/dev/null && apt-get -q {apt} source --download-only sqlite3")
    sh("tar xf sqlite3_*.orig.tar.xz && cd sqlite3-*/ && ./configure -q && make -s sqlite3.c")
    src = next(OUT.glob("sqlite3-*/"))
    for name in ("sqlite3.c", "sqlite3.h", "test/speedtest1.c"):
        shutil.copy(src / name, OUT / Path(name).name)
    sh("gcc -O2 -g -I. -o speedtest1 speedtest1.c sqlite3.c -lpthread -lm")
    return exe


def recorded(size: int) -> None:
    """Count runs 1 (--size N) and 2 (N+1) in bench/out/speedtest1/.perfsleuth, and the
    cachegrind out files of the same commands, once."""
    store = OUT / ".perfsleuth"
    for run, n in ((1, size), (2, size + 1)):
        cg = OUT / f"cachegrind.out.{run}"
        if not cg.exists():
            sh(
                f"valgrind --tool=cachegrind --cachegrind-out-file={cg} "
                f"./speedtest1 --size {n} > /dev/null 2>&1"
            )
        if not (store / f"recorded.{run}").exists():
            sh(
                f"{PY} -m perfsleuth.cli record --quiet --mode count -- "
                f"./speedtest1 --size {n} > /dev/null"
            )
            (store / f"recorded.{run}").touch()


def timed(cmd: str) -> tuple[float, float]:
    """(CPU seconds of the children, wall seconds) of one shell command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        ["bash", "-c", cmd], cwd=OUT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def before_cases(checkout: Path) -> dict[str, str]:
    """`top`, `diff` and `diff --format json` by CHECKOUT's code, on a copy of the store
    made now."""
    store = OUT / ".perfsleuth-before"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(OUT / ".perfsleuth", store, ignore=shutil.ignore_patterns("answers"))
    ps = f"PYTHONPATH={checkout / 'src'} {PY} -m perfsleuth.cli"
    return {
        "before: perfsleuth top": f"{ps} top 1 -n 40 --store {store}",
        "before: perfsleuth diff": f"{ps} diff 1 2 --store {store}",
        "before: perfsleuth diff json": f"{ps} diff 1 2 --format json --store {store}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5, help="speedtest1 --size of run 1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--before",
        type=Path,
        metavar="CHECKOUT",
        help="also time this checkout's top, diff and diff --format json",
    )
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = str(ROOT / "src")
    speedtest1()
    recorded(args.size)
    ps = f"{PY} -m perfsleuth.cli"
    cases = {
        "perfsleuth top": f"{ps} top 1 -n 40",
        f"perfsleuth annotate {FUNCTION}": f"{ps} annotate {FUNCTION} 1 --context 8",
        "perfsleuth annotate --all": f"{ps} annotate --all 1 --context 8",
        "perfsleuth diff": f"{ps} diff 1 2",
        "perfsleuth diff json": f"{ps} diff 1 2 --format json",
        "cg_annotate": "cg_annotate --context=8 cachegrind.out.1",
        "cg_diff": "cg_diff cachegrind.out.1 cachegrind.out.2 > cg.diff",
        "cg_diff + cg_annotate": (
            "cg_diff cachegrind.out.1 cachegrind.out.2 > cg.diff && cg_annotate cg.diff"
        ),
    }
    if args.before:
        cases |= before_cases(args.before.resolve())
    for cmd in cases.values():
        timed(cmd)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, cmd in cases.items():
            times[name].append(timed(cmd))
    medians = {
        name: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
        for name, got in times.items()
    }
    print(
        f"speedtest1 --size {args.size} / {args.size + 1}; medians of {args.runs} interleaved "
        f"runs; load {os.getloadavg()[0]:.1f}"
    )
    print(f"  {'':34} {'CPU s':>7} {'wall s':>7}  ratio (CPU) to")
    against = {
        "perfsleuth top": "cg_annotate",
        f"perfsleuth annotate {FUNCTION}": "cg_annotate",
        "perfsleuth annotate --all": "cg_annotate",
        "perfsleuth diff": "cg_diff",
        "perfsleuth diff json": "cg_diff",
        "before: perfsleuth top": "cg_annotate",
        "before: perfsleuth diff": "cg_diff",
        "before: perfsleuth diff json": "cg_diff",
    }
    for name, (cpu, wall) in medians.items():
        other = against.get(name)
        ratio = f"  {cpu / medians[other][0]:.2f}x {other}" if other else ""
        print(f"  {name:34} {cpu:7.2f} {wall:7.2f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
