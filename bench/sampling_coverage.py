"""How much of a command's CPU time cpu mode's samples account for: per CPU in the
command's cgroup (what `perfsleuth record` does where it may) against per task (what it
does where it may not, and what `perf record -- CMD` does), in the same round.

Per task is forced the way a container forces it: `unshare --mount` with the cgroup
hierarchy remounted read-only for that run only (needs root). Each command's CPU time is
the kernel's account (getrusage of the command and its children, meta `cpu_s`); the
samples' time is their cpu-clock weights (per CPU) or their count over the rate.

Usage: .venv/bin/python bench/sampling_coverage.py [--runs 2] [--freq 999]
Writes bench/out/sampling_coverage.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from perfsleuth.collect.command_cgroup import MOUNTS, hierarchy
from perfsleuth.collect.sampling_gap import sampled_cpu_s
from perfsleuth.store.runs import Store

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "sampling_coverage.json"
SPAWN = ROOT / "bench" / "advisor_set" / "spawn_per_item.c"
GZ_CHECK = "find /usr/share/doc -name '*.gz' | head -400 | xargs -n 1 gzip -t"
COMPILES = (
    'for i in $(seq 60); do echo "int f$i(int x){return x*$i;}" > {d}/u.c; '
    "gcc -O2 -c {d}/u.c -o {d}/u.o; done"
)
PYTHONS = "for i in $(seq 60); do python3 -c pass; done"


def commands(work: Path) -> dict[str, list[str]]:
    exe = work / "spawn_per_item"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(SPAWN)], check=True)
    corpus = work / "corpus.txt"
    corpus.write_text("".join(f"line {i} of a compressible text\n" for i in range(400_000)))
    return {
        "spawn_per_item (1,000 children)": [str(exe)],
        "xargs -n 1 gzip -t (400 files)": ["sh", "-c", GZ_CHECK],
        "gcc -c in a loop (60)": ["sh", "-c", COMPILES.replace("{d}", str(work))],
        "python3 -c pass (60)": ["sh", "-c", PYTHONS],
        "xz -6 -T1 (one process)": ["sh", "-c", f"xz -6 -T1 -c {corpus} > /dev/null"],
    }


def record(cmd: list[str], store: Path, freq: int, per_task: bool) -> dict:
    argv = [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(store)]
    argv += ["--freq", str(freq), "--", *cmd]
    if per_task:
        mount = hierarchy(MOUNTS.read_text())[0]  # type: ignore[index]
        script = f'mount -o remount,bind,ro {mount} && exec "$@"'
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {done.stderr.strip()}")
    runs = Store(store)
    profile = runs.load(runs.resolve("latest"))
    cpu_s = float(profile.meta.get("cpu_s") or 0)
    sampled = sampled_cpu_s(profile, freq)
    return {
        "sampled": profile.meta.get("sampled"),
        "samples": profile.num_samples,
        "processes": len({t.pid for t in profile.threads}),
        "cpu_s": cpu_s,
        "sampled_s": round(sampled, 3),
        "coverage": round(sampled / cpu_s, 3) if cpu_s else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--freq", type=int, default=999)
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[0]
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="coverage-") as tmp:
        work = Path(tmp)
        for name, cmd in commands(work).items():
            for run in range(args.runs):
                for per_task in (False, True):
                    store = work / f"s-{len(results)}-{run}-{per_task}"
                    got = record(cmd, store, args.freq, per_task)
                    results.setdefault(name, []).append(got)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"freq": args.freq, "load": load, "results": results}, indent=1))
    print(f"load {load}, {args.freq} Hz: samples' CPU time / the command's (processes sampled)")
    print("| command | per CPU | per task |\n|---|---|---|")
    for name, rows in results.items():
        cells: dict[str, list[str]] = {"per CPU": [], "per task": []}
        for row in rows:
            cells[row["sampled"]].append(f"{100 * row['coverage']:.0f}% ({row['processes']})")
        print(f"| {name} | {', '.join(cells['per CPU'])} | {', '.join(cells['per task'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
