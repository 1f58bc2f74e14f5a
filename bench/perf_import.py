#!/usr/bin/env python3
"""Benchmark: reading a large perf.data — perfsleuth vs perf report vs perf script | inferno.

    .venv/bin/python bench/perf_import.py [--samples 500000] [--runs 3] [--data FILE]
        [--before CHECKOUT]

Records (once, cached in bench/out/) a perf.data with >= --samples call-graph
samples of bench/import_workload.c (2 threads, perf record -F max -g), then
times, in one run and interleaved, each of:

  perfsleuth    python: perf_data.read(FILE) + top-20 functions by self weight
  perfsleuth import + top   the CLI: import into a fresh store, then `perfsleuth top`
  perf report   perf report --stdio --no-children -i FILE
  perf script   perf script -i FILE > /dev/null
  script|inferno  perf script -i FILE | inferno-collapse-perf > /dev/null

and prints the median wall time, the ratio to perf report and the peak RSS.
inferno is installed with `cargo install inferno` when missing. With --before, the
CLI path of another checkout of perfsleuth (its src/ first on PYTHONPATH) is timed in
the same rounds, so a change is measured against the code before it on the same load.
Python writes its bytecode caches (a user's installed package has them), whatever
PYTHONDONTWRITEBYTECODE says here: compiling every module again is not perfsleuth's cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PY = ROOT / ".venv" / "bin" / "python"

OURS = """
import sys
from collections import Counter
from perfsleuth.formats import perf_data
p = perf_data.read(sys.argv[1])
self_w = Counter()
for stack, w, c, t, s in p.rows():
    leaf = next((p.frames[f] for f in stack if not p.frames[f].inlined), None)
    if leaf is not None:
        self_w[(leaf.function, leaf.dso)] += w
total = p.total
for (fn, dso), w in self_w.most_common(20):
    print(f"{100 * w / total:6.2f}%  {dso:20s} {fn}")
print(f"samples={p.num_samples} stacks={len(p.stacks)} frames={len(p.frames)}", file=sys.stderr)
"""


def sh(cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], check=True, **kw)


def count_samples(data: Path) -> int:
    res = subprocess.run(
        [
            str(PY),
            "-c",
            "import sys, perfsleuth_native as n; "
            "print(n.read_perf_data(sys.argv[1])['meta']['num_samples'])",
            str(data),
        ],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        # no native extension: let perf count
        res = sh(f"perf script -i {data} -F period 2>/dev/null | wc -l", capture_output=True)
        return int(res.stdout.decode().split()[0])
    return int(res.stdout.strip())


def record(samples: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = OUT / "import_workload"
    src = ROOT / "bench" / "import_workload.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        sh(f"gcc -O2 -g -fno-omit-frame-pointer -pthread -o {exe} {src}")
    data = OUT / "import.data"
    seconds = 10.0
    for _ in range(6):
        if data.exists():
            n = count_samples(data)
            if n >= samples:
                print(f"using {data}: {n} samples, {data.stat().st_size / 1e6:.0f} MB")
                return data
            seconds = seconds * samples / max(n, 1) * 1.15
        print(f"recording {seconds:.0f} s of {exe.name} (perf record -F max -g) ...", flush=True)
        sh(f"cd {OUT} && perf record -q -F max -g -o {data} -- {exe} 2 {seconds:.1f} > /dev/null")
    raise SystemExit(f"could not record {samples} samples")


def ensure_inferno() -> str | None:
    exe = shutil.which("inferno-collapse-perf") or str(
        Path.home() / ".cargo/bin/inferno-collapse-perf"
    )
    if os.access(exe, os.X_OK):
        return exe
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    if not os.access(cargo, os.X_OK):
        print("cargo not found; skipping perf script | inferno", file=sys.stderr)
        return None
    print("installing inferno (cargo install inferno) ...", flush=True)
    subprocess.run([cargo, "install", "--quiet", "inferno"], check=True)
    return str(Path.home() / ".cargo/bin/inferno-collapse-perf")


def timed(cmd: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+sys, all processes) and peak RSS (MB, the
    largest process of the pipeline). CPU time is the fairer number on a busy box."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["bash", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {cmd}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def import_and_top(cli: str, checkout: Path, store: Path, data: Path) -> str:
    """The shell command of `import` into a fresh store, then `top`, by CHECKOUT's code."""
    env = f"PYTHONPATH={checkout / 'src'}"
    return (
        f"rm -rf {store} && {env} {cli} import --quiet --store {store} {data} && "
        f"{env} {cli} top --store {store} -n 20"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, help="use this perf.data instead of recording one")
    ap.add_argument(
        "--before", type=Path, metavar="CHECKOUT", help="also time this checkout's import + top"
    )
    args = ap.parse_args()

    data = args.data or record(args.samples)
    inferno = ensure_inferno()
    script = OUT / "ours.py"
    OUT.mkdir(parents=True, exist_ok=True)
    script.write_text(OURS)
    cli = f"{PY} -m perfsleuth.cli"
    cases = {
        "perfsleuth (native+symbolize+top)": f"PYTHONPATH={ROOT / 'src'} {PY} {script} {data}",
        # the whole user path: import into a fresh DuckDB store, then `top`
        "perfsleuth import + top (CLI, store)": import_and_top(
            cli, ROOT, OUT / "import-store", data
        ),
    }
    if args.before:
        cases["before: import + top (CLI, store)"] = import_and_top(
            cli, args.before.resolve(), OUT / "import-store-before", data
        )
    cases |= {
        "perf report --stdio --no-children": f"perf report --stdio --no-children -i {data}",
        "perf script": f"perf script -i {data}",
    }
    if inferno:
        cases["perf script | inferno-collapse-perf"] = f"perf script -i {data} | {inferno}"

    # warm the page cache and every tool once, then interleave the timed runs
    for cmd in cases.values():
        timed(cmd)
    results: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cases}
    for _ in range(args.runs):
        for name, cmd in cases.items():
            results[name].append(timed(cmd))

    n = count_samples(data)
    print(f"\n{data}: {n} samples, {data.stat().st_size / 1e6:.0f} MB, {os.cpu_count()} CPUs")
    rep = results["perf report --stdio --no-children"]
    ref = statistics.median(w for w, _, _ in rep)
    ref_cpu = statistics.median(c for _, c, _ in rep)
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}; median of {args.runs} runs")
    hdr = ("wall s", "min s", "vs rep", "cpu s", "vs rep", "peak RSS")
    print(f"{'':38s} {hdr[0]:>7s} {hdr[1]:>7s} {hdr[2]:>7s} {hdr[3]:>7s} {hdr[4]:>7s} {hdr[5]:>9s}")
    for name, runs in results.items():
        walls = [w for w, _, _ in runs]
        med = statistics.median(walls)
        cpu = statistics.median(c for _, c, _ in runs)
        rss = max(r for _, _, r in runs)
        print(
            f"{name:38s} {med:7.2f} {min(walls):7.2f} {med / ref:6.2f}x "
            f"{cpu:7.2f} {cpu / ref_cpu:6.2f}x {rss:6d} MB"
        )
    print("\nperfsleuth top functions (self):")
    top = subprocess.run([str(PY), str(script), str(data)], capture_output=True, text=True)
    print("\n".join(top.stdout.splitlines()[:8]))


if __name__ == "__main__":
    main()
