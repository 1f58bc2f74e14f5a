"""What a cache-mode recording costs, beside valgrind's own tools on the same run.

For each program: the native run; valgrind without a tool (`--tool=none`); fntrace,
cache mode's tool, recording every call of the function to /dev/null (the tracer's
cost for traced functions, the rest of the program untraced); `perfsleuth record
--mode cache --function F` as a user runs it, two ways: the first 200 calls kept,
then the program is stopped (`--sample-calls 1`), and the default, 1 in k calls
over the whole run (k doubling as it goes; perfsleuth's own Python included in
both); lackey `--trace-mem=yes`
to /dev/null (what cache mode used before; stopped at --lackey-timeout);
callgrind and cachegrind writing their totals to /dev/null.

Times are CPU seconds (user + system of the child processes, from getrusage),
because the benchmark machine is shared: wall time there measures the neighbours.
The slowdown is that against the native run's CPU time; each figure the median of
--repeats runs.

Usage: .venv/bin/python bench/cache_trace_cost.py [--repeats 3] [--lackey-timeout 1200]
       [--program LABEL] [--skip lackey]
Writes bench/out/cache_trace_cost.json and prints a Markdown table (docs/cache.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from perfsleuth.collect import fntrace
from perfsleuth.collect.memtrace import load_base
from perfsleuth.symbols.symbolizer import elf_symbols

ROOT = Path(__file__).resolve().parents[1]
PERFSLEUTH = str(ROOT / ".venv" / "bin" / "perfsleuth")
PROGRAMS = [  # (label, argv, function)
    ("conntable 200000 2000000", ["conntable", "200000", "2000000"], "handle_packet"),
    ("conntable 1000000 10000000 (>= 1 s)", ["conntable", "1000000", "10000000"], "handle_packet"),
    # in-cache and compute-bound where conntable waits on memory: valgrind's own cost shows
    ("sessions 4096 150000000 (>= 1 s)", ["sessions", "4096", "150000000"], "serve"),
]


def cpu_seconds(argv: list[str], env: dict[str, str] | None = None, timeout: float = 0) -> dict:
    """CPU and wall seconds of ARGV and its children; cpu None when stopped at timeout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True, timeout=timeout or None)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"cpu_s": None, "wall_s": time.monotonic() - started}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": time.monotonic() - started}


def ways(argv: list[str], function: str, store: Path) -> dict[str, tuple[list[str], dict | None]]:
    executable = argv[0]
    entry = elf_symbols(executable).address_of(function)
    assert entry is not None, function
    tool = fntrace.tool_dir()
    assert tool is not None, "fntrace cannot be built here"
    fntrace_env = {**os.environ, "VALGRIND_LIB": tool}
    record = [PERFSLEUTH, "--store", str(store), "record", "--mode", "cache"]
    record += ["--function", function]
    return {
        "native": (argv, None),
        "valgrind --tool=none": (["valgrind", "--tool=none", *argv], None),
        "fntrace, every call": (
            [
                "valgrind",
                "--tool=fntrace",
                f"--entry={entry + load_base(executable):#x}",
                "--out-fd=1",
                *argv,
            ],
            fntrace_env,
        ),  # fmt: skip
        "perfsleuth record --mode cache, the first 200 calls (--sample-calls 1)": (
            [*record, "--sample-calls", "1", "--", *argv],
            None,
        ),
        "perfsleuth record --mode cache, 1 in k calls over the whole run (default)": (
            [*record, "--", *argv],
            None,
        ),
        "callgrind": (
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
            None,
        ),  # fmt: skip
        "cachegrind": (
            ["valgrind", "--tool=cachegrind", "--cachegrind-out-file=/dev/null", *argv],
            None,
        ),
        "lackey --trace-mem=yes": (
            ["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=/dev/null", *argv],
            None,
        ),
    }


def measure(
    label: str, argv: list[str], function: str, repeats: int, timeout: float, skip: str
) -> dict:
    argv = [str(ROOT / "examples" / "bin" / argv[0]), *argv[1:]]
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (command, env) in ways(argv, function, Path(scratch) / "store").items():
            if skip and skip in name:
                continue
            once = name.startswith("lackey")  # minutes per run: once is enough
            runs = [
                cpu_seconds(command, env, timeout if once else 0)
                for _ in range(1 if once else repeats)
            ]
            cpus = [r["cpu_s"] for r in runs]
            rows[name] = {
                "cpu_s": None if None in cpus else statistics.median(cpus),
                "wall_s": statistics.median(r["wall_s"] for r in runs),
                "runs": runs,
            }
            print(f"{label}: {name}: {rows[name]['cpu_s']} s CPU", flush=True)
    native = rows["native"]["cpu_s"]
    for row in rows.values():
        row["slowdown"] = row["cpu_s"] / native if row["cpu_s"] is not None else None
    return {"program": label, "function": function, "ways": rows}


def table(results: list[dict], timeout: float) -> str:
    names = list(results[0]["ways"])
    head = "| way | " + " | ".join(r["program"] for r in results) + " |"
    lines = [head, "| --- |" + " --- |" * len(results)]
    for name in names:
        cells = []
        for r in results:
            row = r["ways"][name]
            cells.append(
                f"{row['cpu_s']:.2f} s ({row['slowdown']:.1f}x)"
                if row["cpu_s"] is not None
                else f"> {timeout:.0f} s wall (stopped)"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lackey-timeout", type=float, default=1200.0, help="wall seconds")
    parser.add_argument("--program", default="", help="only the programs whose label has this")
    parser.add_argument("--skip", default="", help="leave out the ways whose name has this")
    args = parser.parse_args()
    results = [
        measure(label, argv, function, args.repeats, args.lackey_timeout, args.skip)
        for label, argv, function in PROGRAMS
        if args.program in label
    ]
    out = (
        ROOT / "bench" / "out" / f"cache_trace_cost{'-' if args.program else ''}{args.program}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(table(results, args.lackey_timeout))


if __name__ == "__main__":
    main()
