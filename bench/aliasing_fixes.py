#!/usr/bin/env python3
"""Benchmark: the aliasing fixes `advise --verify --build` proposes and times, on the
study's shapes, with GCC 12 and clang 16 at -O2.

    .venv/bin/python bench/aliasing_fixes.py [--shapes swap64 expand keys gstring] \
        [--compilers g++-12 clang++-16]

For each shape (examples/aliasing/: swap64.cc bitcoin's SwapBase64, expand.cc its
ExpandHRP, keys.cc -DKEY_IN_HEADER Monero's bulletproof_PROVE with its key type in a
header, gstring_append.c glib's g_string_append_c_inline, with the installed glib
2.74.6's headers copied next to it as the project's own) and compiler (the C one for
C), as a user would: copy the example into a scratch folder, build it `-O2 -g`,
`perfsleuth record` it, then `perfsleuth advise --all --verify --build '<the same
build into $OUT>'`, which changes a copy of the source, builds both and runs them
interleaved (CPU time, 10 pairs). The baseline is the program as written: the ratio is
the user's own build against the fixed one. Prints a table (the change proved, the
compiler's verdict, the program's CPU-time ratio with its 95% interval, the function's
implied ratio) and writes bench/out/aliasing_fixes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
EXAMPLES = ROOT / "examples" / "aliasing"
# name: (sources to copy, build flags, libraries, workload arguments)
SHAPES = {
    "swap64": (["swap64.cc"], "-std=c++20", "", "100000"),
    "expand": (["expand.cc"], "-std=c++20", "", "15000"),
    "keys": (["keys.cc", "key.h"], "-std=c++20 -DKEY_IN_HEADER", "", "40000"),
    "gstring": (
        ["gstring_append.c"],
        "-Iinclude/glib-2.0 -Iinclude/glibconfig",
        "-lglib-2.0",
        "100000",
    ),
}
C_COMPILERS = {"g++-12": "gcc-12", "clang++-16": "clang-16"}
GLIB_HEADERS = Path("/usr/include/glib-2.0")
GLIB_CONFIG = Path("/usr/lib/x86_64-linux-gnu/glib-2.0/include/glibconfig.h")


def perfsleuth(args: list[str], cwd: Path) -> str:
    command = [sys.executable, "-m", "perfsleuth.cli", "--quiet", "--store", "store", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True).stdout


def measure(shape: str, compiler: str) -> dict:
    sources, flags, libraries, workload = SHAPES[shape]
    program = Path(sources[0]).stem
    if sources[0].endswith(".c"):
        compiler = C_COMPILERS.get(compiler, compiler)
    with tempfile.TemporaryDirectory(prefix="aliasing-fixes-") as tmp:
        folder = Path(tmp)
        for name in sources:
            shutil.copy(EXAMPLES / name, folder / name)
        if shape == "gstring":
            shutil.copytree(GLIB_HEADERS, folder / "include" / "glib-2.0")
            (folder / "include" / "glibconfig").mkdir()
            shutil.copy(GLIB_CONFIG, folder / "include" / "glibconfig")
        build = f"{compiler} -O2 -g {flags} -o $OUT/{program} {sources[0]} {libraries}"
        env = {**os.environ, "OUT": str(folder)}
        subprocess.run(["sh", "-c", build], cwd=folder, env=env, check=True)
        database = folder / "compile_commands.json"
        command = f"{compiler} -O2 -g {flags} -c {sources[0]}"
        entry = {"directory": str(folder), "file": sources[0], "command": command}
        database.write_text(json.dumps([entry]))
        perfsleuth(["record", "--", f"./{program}", workload], folder)
        advise = [
            "advise", "--all", "--verify", "--build", build,
            "--compile-commands", str(database), "--format", "json",
        ]  # fmt: skip
        advice = json.loads(perfsleuth(advise, folder))
    found = [f for f in advice["findings"] if f["kind"] == "aliasing-write"]
    if not found:
        return {"shape": shape, "compiler": compiler, "notes": advice.get("notes", [])}
    verified = found[0].get("verified") or {}
    return {
        "shape": shape,
        "compiler": compiler,
        "function": found[0]["function"],
        "share": found[0]["share"],
        "change": verified.get("change"),
        "vectorized_after": verified.get("vectorized_after"),
        "per_element": [
            verified.get("instructions_per_element_before"),
            verified.get("instructions_per_element_after"),
        ],
        "ratio": verified.get("ratio"),
        "ci95": verified.get("ci95"),
        "function_ratio": verified.get("function_ratio"),
        "verdict": verified.get("verdict"),
        "notes": advice.get("notes", []),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--compilers", nargs="+", default=["g++-12", "clang++-16"])
    args = parser.parse_args()
    rows = [measure(s, c) for s in args.shapes for c in args.compilers]
    print(f"{'shape':8} {'compiler':11} {'ratio':>7} {'95% CI':>13} {'function':>8}  change")
    for row in rows:
        if row.get("ratio") is None:
            print(f"{row['shape']:8} {row['compiler']:11} not timed: {row['notes']}")
            continue
        lo, hi = row["ci95"]
        print(
            f"{row['shape']:8} {row['compiler']:11} {row['ratio']:7.2f} {lo:6.2f}-{hi:<6.2f} "
            f"{row['function_ratio'] or '-':>8}  {row['change']}"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "aliasing_fixes.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
