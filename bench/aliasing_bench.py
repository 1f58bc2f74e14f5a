#!/usr/bin/env python3
"""Benchmark: the deep analysis of one hot translation unit (aliasing writes and
missed vectorisation), per unit.

    .venv/bin/python bench/aliasing_bench.py [--runs 3] [--functions 300]

For each unit — the example examples/aliasing/expand.cc, the two files of the
labelled set, and a generated unit that includes a dozen standard headers and holds
--functions loop functions — it times, --runs times (median reported):
  parse    libclang parse and the source patterns (find_matches)
  compile  clang-16 with the unit's flags and the loop-vectorize remarks
  lint     both together, in parallel, matching every function (perfsleuth lint)
  hot      the same with one hot function, as `perfsleuth advise` runs it on a
           profile (the patterns only look at functions holding sampled lines)
and, on the example binary, the capstone disassembly of the hot loop (machine).
Prints a table and writes bench/out/aliasing_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from perfsleuth.static_analysis import memory_access, unit_analysis
from perfsleuth.static_analysis.aliasing_patterns import find_matches
from perfsleuth.static_analysis.compiler_remarks import compile_unit
from perfsleuth.static_analysis.machine_code import loop_code
from perfsleuth.static_analysis.source import TranslationUnit, parse

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
HEADERS = [
    "algorithm",
    "cstdint",
    "cstring",
    "iostream",
    "map",
    "memory",
    "regex",
    "sstream",
    "string",
    "unordered_map",
    "vector",
    "functional",
]
LOOP = """
void fill_{n}(std::vector<uint8_t>& v, const std::string& s) {{
    for (std::size_t i = 0; i < s.size(); ++i) v[i] = s[i] ^ {n};
}}
uint32_t sum_{n}(const std::vector<uint32_t>& v) {{
    uint32_t t = 0;
    for (std::size_t i = 0; i < v.size(); ++i) t += v[i] * {n};
    return t;
}}
"""


def generated_unit(functions: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "generated_unit.cc"
    includes = "".join(f"#include <{h}>\n" for h in HEADERS)
    path.write_text(includes + "".join(LOOP.format(n=n) for n in range(functions)))
    return path


def median_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def time_unit(unit: TranslationUnit, runs: int) -> dict:
    def source_patterns() -> None:
        memory_access._INLINE_CACHE.clear()
        find_matches(parse(unit), unit.path)

    def whole_unit(hot_lines: frozenset[tuple[str, int]] | None) -> None:
        unit_analysis._REPORTS.clear()  # time the analysis, not the caches
        memory_access._INLINE_CACHE.clear()
        unit_analysis.analyse_unit(unit, hot_lines)

    first_loop = next(n for n, line in enumerate(unit.path.open(), 1) if "for (" in line)
    hot_loop = frozenset({(unit.path.name, first_loop)})

    lines = sum(1 for _ in unit.path.open())
    return {
        "unit": unit.path.name,
        "lines": lines,
        "parse_s": median_seconds(source_patterns, runs),
        "compile_s": median_seconds(lambda: compile_unit(unit), runs),
        "lint_s": median_seconds(lambda: whole_unit(None), runs),
        "hot_s": median_seconds(lambda: whole_unit(hot_loop), runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--functions", type=int, default=300)
    args = parser.parse_args()
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples"), "bin/expand"], check=True)
    aliasing_set = ROOT / "tests" / "aliasing_set"
    units = [
        TranslationUnit(ROOT / "examples/aliasing/expand.cc", ["-O2", "-std=c++20"], "bench"),
        TranslationUnit(aliasing_set / "containers.cc", ["-O2", "-std=c++20"], "bench"),
        TranslationUnit(aliasing_set / "pointers.c", ["-O2", "-std=gnu17"], "bench"),
        TranslationUnit(generated_unit(args.functions), ["-O2", "-std=c++20"], "bench"),
    ]
    rows = [time_unit(unit, args.runs) for unit in units]
    binary = ROOT / "examples" / "bin" / "expand"
    machine_s = median_seconds(lambda: loop_code(binary, "expand.cc", 17, 21), args.runs)
    print(f"{'unit':22} {'lines':>6} {'parse':>8} {'compile':>8} {'lint':>8} {'hot':>8}")
    for row in rows:
        print(
            f"{row['unit']:22} {row['lines']:>6} {row['parse_s']:>7.2f}s "
            f"{row['compile_s']:>7.2f}s {row['lint_s']:>7.2f}s {row['hot_s']:>7.2f}s"
        )
    print(f"machine code of the example's hot loop: {machine_s:.3f}s")
    OUT.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    print(f"load average while measuring: {load:.1f} on {os.cpu_count()} cores")
    result = {"runs": args.runs, "units": rows, "machine_code_s": machine_s, "load": load}
    (OUT / "aliasing_bench.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
