#!/usr/bin/env python3
"""Benchmark: `perfsleuth lint` over whole real codebases, in CPU seconds per
translation unit, beside clang's own `-fsyntax-only` over the same units (the floor
a user knows: any analysis of a unit's syntax tree parses it at least once).

    .venv/bin/python bench/aliasing_codebases.py \
        --codebase monero=/src/monero/build/compile_commands.json \
        --codebase glib=/src/glib/build/compile_commands.json [--units 20] \
        [--baseline-src /old/perfsleuth/src]

The codebases are the user's: a compile_commands.json from their build (meson,
CMake, bear) or written by hand. For each one, on --units units spread evenly over
its database (every k-th entry, so a sample covers all its folders):
  perfsleuth   CPU of one unit's analysis as a lint worker runs it (parse, source
               patterns, clang's remarks when a match needs them), this process and
               the compilers it started (getrusage)
  baseline     the same with the code under --baseline-src (the analysis before)
  syntax-only  CPU of `clang -fsyntax-only` with the unit's flags
  lint cold    CPU of `perfsleuth lint` over those units, empty cache (workers and
               compilers included)
  lint warm    the same again: every unit's report read back from the cache
Prints a table (medians per unit, the ratio to -fsyntax-only) and writes
bench/out/aliasing_codebases.json. CPU time, not wall time: on a shared machine
wall time says how busy it is.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from perfsleuth.static_analysis.clang_flags import clang_accepted

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def cpu_seconds() -> float:
    """CPU of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sample_units(database: Path, count: int) -> list[dict]:
    """`count` units spread evenly over the database, as lint builds them."""
    from perfsleuth.static_analysis.compile_db import load_compile_commands

    table = load_compile_commands(database)
    existing = [path for path in sorted(table) if path.is_file()]
    step = max(1, len(existing) // count)
    return [
        {"path": str(path), "flags": list(table[path].args), "directory": table[path].directory}
        for path in existing[::step][:count]
    ]


def measure_analysis(units: list[dict]) -> list[dict]:
    """Per unit: CPU seconds of its analysis, and whether it compiled."""
    from perfsleuth.static_analysis.source import TranslationUnit
    from perfsleuth.static_analysis.unit_analysis import analyse_unit

    results = []
    for unit in units:
        tu = TranslationUnit(
            Path(unit["path"]), unit["flags"], "compile_commands.json", Path(unit["directory"])
        )
        before = cpu_seconds()
        report = analyse_unit(tu)
        results.append({"cpu": cpu_seconds() - before, "error": report.error})
    return results


def measure_in(src: Path, units: list[dict]) -> list[dict]:
    """measure_analysis with the perfsleuth code under `src`, in a fresh process."""
    done = subprocess.run(
        [sys.executable, __file__, "--measure-units"],
        input=json.dumps(units),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        check=True,
    )
    return json.loads(done.stdout)


def syntax_only(units: list[dict]) -> list[float]:
    seconds = []
    for unit in units:
        cxx = Path(unit["path"]).suffix != ".c"
        flags = clang_accepted(unit["flags"], cxx)  # as the analysis passes them
        argv = ["clang++-16" if cxx else "clang-16", *flags, "-fsyntax-only", unit["path"]]
        before = cpu_seconds()
        subprocess.run(argv, cwd=unit["directory"], capture_output=True)
        seconds.append(cpu_seconds() - before)
    return seconds


def lint_cpu(database: Path, units: list[dict], cache: Path) -> float:
    argv = [sys.executable, "-m", "perfsleuth.cli", "lint", "--compile-commands", str(database)]
    argv += ["--format", "json", *[unit["path"] for unit in units]]
    before = cpu_seconds()
    subprocess.run(
        argv, capture_output=True, env={**os.environ, "XDG_CACHE_HOME": str(cache)}, check=True
    )
    return cpu_seconds() - before


def codebase(name: str, database: Path, count: int, baseline: Path | None) -> dict:
    units = sample_units(database, count)
    analysed = measure_in(ROOT / "src", units)
    compiled = [n for n, result in enumerate(analysed) if not result["error"]]
    result = {
        "codebase": name,
        "units": len(units),
        "units_that_compile": len(compiled),
        "perfsleuth_cpu_s": [analysed[n]["cpu"] for n in compiled],
        "syntax_only_cpu_s": syntax_only([units[n] for n in compiled]),
    }
    if baseline is not None:
        before = measure_in(baseline, [units[n] for n in compiled])
        result["baseline_cpu_s"] = [b["cpu"] for b in before]
    with tempfile.TemporaryDirectory(prefix="perfsleuth-bench-cache-") as cache:
        result["lint_cold_cpu_s"] = lint_cpu(database, units, Path(cache))
        result["lint_warm_cpu_s"] = lint_cpu(database, units, Path(cache))
    return result


def row(result: dict) -> str:
    ours = statistics.median(result["perfsleuth_cpu_s"])
    floor = statistics.median(result["syntax_only_cpu_s"])
    cells = [result["codebase"], f"{result['units_that_compile']}/{result['units']}"]
    if "baseline_cpu_s" in result:
        cells.append(f"{statistics.median(result['baseline_cpu_s']):.2f} s")
    cells += [f"{ours:.2f} s", f"{floor:.2f} s", f"{ours / floor:.2f}x"]
    cells += [f"{result['lint_cold_cpu_s']:.1f} s", f"{result['lint_warm_cpu_s']:.2f} s"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codebase", action="append", default=[], metavar="NAME=DB")
    parser.add_argument("--units", type=int, default=20, help="units sampled per codebase")
    parser.add_argument("--baseline-src", type=Path, help="perfsleuth's src/ to compare with")
    parser.add_argument("--measure-units", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_units:
        print(json.dumps(measure_analysis(json.loads(sys.stdin.read()))))
        return
    results = []
    for spec in args.codebase:
        name, _, database = spec.partition("=")
        results.append(codebase(name, Path(database), args.units, args.baseline_src))
    load = os.getloadavg()[0]
    before = "baseline per unit | " if args.baseline_src else ""
    print(f"load average {load:.1f}; CPU seconds, medians per unit")
    print(
        f"| codebase | units compiled | {before}perfsleuth per unit | clang -fsyntax-only "
        "per unit | ratio | lint cold (all) | lint warm (all) |"
    )
    print("|---" * (8 if args.baseline_src else 7) + "|")
    for result in results:
        print(row(result))
    OUT.mkdir(parents=True, exist_ok=True)
    document = {"load_average": load, "codebases": results}
    (OUT / "aliasing_codebases.json").write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
