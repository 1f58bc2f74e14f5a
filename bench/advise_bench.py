#!/usr/bin/env python3
"""Benchmark: advising a stored run of >= 500,000 samples vs the time to record it.

    .venv/bin/python bench/advise_bench.py [--samples 500000] [--runs 3]

Records bench/import_workload.c (2 threads, many distinct stacks) with
`perfsleuth record --freq 25000` into a scratch store under bench/out/, growing
the duration until the run holds --samples samples, then times, each --runs
times, `perfsleuth advise` on that stored run (a fresh process: load from the
store, every analyzer, ranking, storing the findings). It also times each
analyzer alone in this process (wall and CPU seconds, the compilers' included),
so slow analyzers can be told apart.

    .venv/bin/python bench/advise_bench.py --store DIR [--run ID] [--budget S]

times instead a run already recorded (a real program, e.g. `perfsleuth run --store
DIR -- ./k2 ...`): `perfsleuth advise` with the default budget and with --budget S
(default 1000: no bound in practice), each --runs times in a copy of the store with
no unit report cached: the median CPU seconds (advise's and its compilers'), each
run's wall seconds and load average, the findings' rules and the notes.
Prints a table and writes bench/out/advise_bench.json (advise_budget_bench.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PERFSLEUTH = ROOT / ".venv" / "bin" / "perfsleuth"
FREQ = 25000


def build_workload() -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = OUT / "import_workload"
    src = ROOT / "bench" / "import_workload.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(
            ["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe), str(src)],
            check=True,
        )
    return exe


def record(store: Path, samples: int) -> tuple[int, float, float]:
    """(samples, wall seconds of `perfsleuth record`, seconds the workload ran)."""
    exe = build_workload()
    seconds = 8.0
    for _ in range(4):
        shutil.rmtree(store, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run(
            [
                str(PERFSLEUTH),
                "record",
                "--store",
                str(store),
                "--freq",
                str(FREQ),
                "--format",
                "json",
                "-o",
                str(OUT / "advise_record.json"),
                "--",
                str(exe),
                "2",
                f"{seconds:.1f}",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        got = int(json.loads((OUT / "advise_record.json").read_text())["samples"])
        if got >= samples:
            return got, wall, seconds
        seconds = seconds * samples / max(got, 1) * 1.15
    raise SystemExit(f"could not record {samples} samples")


def time_advise(store: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [str(PERFSLEUTH), "advise", "--store", str(store), "--format", "json"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    return times


def time_analyzers(store_path: Path, run: str = "latest") -> dict[str, tuple[float, float]]:
    """name -> (wall, CPU seconds) of loading the run and of each analyzer."""
    from perfsleuth.advisor import AdviseOptions, build_context
    from perfsleuth.analyzers import discover
    from perfsleuth.static_analysis.cpu_limits import cpu_seconds
    from perfsleuth.store.runs import Store

    store = Store(store_path)
    run_id = store.resolve(run)
    start, cpu = time.perf_counter(), cpu_seconds()
    loaded = store.load_run(run_id)
    timings = {"(load the run from the store)": (time.perf_counter() - start, cpu_seconds() - cpu)}
    ctx = build_context(store, loaded.info, loaded.profile, AdviseOptions(), loaded)
    for name, analyze in discover().items():
        start, cpu = time.perf_counter(), cpu_seconds()
        analyze(ctx)
        timings[name] = (time.perf_counter() - start, cpu_seconds() - cpu)
    return timings


def advise_stored(store: Path, run: str, extra: list[str]) -> dict:
    """One `perfsleuth advise` of the run in a copy of the store, with no unit report
    kept from before: wall and CPU seconds (advise's and its compilers'), the load
    average, the findings' rules and the notes."""
    scratch = OUT / "advise_budget_store"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(store, scratch)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cold:
        argv = [str(PERFSLEUTH), "advise", "--store", str(scratch), run, *extra]
        done = subprocess.run(
            [*argv, "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "XDG_CACHE_HOME": cold},
        )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    shutil.rmtree(scratch, ignore_errors=True)
    doc = json.loads(done.stdout)
    rules = sorted(f["rule"] for f in doc.get("findings", []))
    return {"wall_s": wall, "cpu_s": cpu, "load": load, "rules": rules, "notes": doc["notes"]}


def time_stored_run(store: Path, run: str, budget: float, runs: int) -> None:
    """advise on a recorded run, with the default budget and with `budget`, each
    `runs` times: the median CPU seconds, and the findings of each."""
    rows = {}
    for label, extra in (("default budget", []), (f"--budget {budget:g}", [f"--budget={budget}"])):
        done = [advise_stored(store, run, extra) for _ in range(runs)]
        cpu = statistics.median(d["cpu_s"] for d in done)
        rows[label] = {"cpu_median_s": cpu, "runs": done}
        each = ", ".join(f"{d['cpu_s']:.1f}" for d in done)
        walls = ", ".join(f"{d['wall_s']:.0f}" for d in done)
        loads = ", ".join(f"{d['load']:.0f}" for d in done)
        print(
            f"advise, {label:16s} CPU median of {runs} {cpu:6.1f} s "
            f"(each {each}; wall {walls} s; load {loads})"
        )
        print(f"  findings: {', '.join(done[-1]['rules'])}")
        for note in done[-1]["notes"]:
            print(f"  note: {note}")
    (OUT / "advise_budget_bench.json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--store", type=Path, help="time advise on a run of this store")
    parser.add_argument("--run", default="latest")
    parser.add_argument("--budget", type=float, default=1000.0)
    args = parser.parse_args()
    if args.store:
        OUT.mkdir(parents=True, exist_ok=True)
        time_stored_run(args.store, args.run, args.budget, args.runs)
        return
    store = OUT / "advise_store"
    samples, record_wall, workload_s = record(store, args.samples)
    advise = time_advise(store, args.runs)
    analyzers = time_analyzers(store)
    median = statistics.median(advise)
    print(f"run: {samples:,} samples, workload ran {workload_s:.1f} s")
    print(f"perfsleuth record (workload + perf + read + symbolize + store): {record_wall:6.2f} s")
    print(
        f"perfsleuth advise, median of {args.runs}:                          {median:6.2f} s "
        f"({100 * median / record_wall:.0f}% of recording)"
    )
    print("in-process time per analyzer (wall, CPU with the compilers'):")
    for name, (wall, cpu) in sorted(analyzers.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:40s} {wall:6.2f} s  {cpu:6.2f} CPU-s")
    result = {
        "samples": samples,
        "workload_s": workload_s,
        "record_s": record_wall,
        "advise_s": advise,
        "advise_median_s": median,
        "analyzers_s": analyzers,
    }
    (OUT / "advise_bench.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
