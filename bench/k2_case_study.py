"""The K2 case study of the reference texts, repeated with perfsleuth's commands alone.

Records the program and ranks its findings (`perfsleuth run`), then proves the fixes
the post made: `try allocator`, `try patch` (vector<bool> -> vector<char8_t>),
`try build` (K2's own LTO, PGO, PGO+LTO), `try build --dependency` for a library built
from source, and `try combined` (allocator + patch + PGO+LTO, cumulatively, in one
interleaved run); prints each measured gain beside the post's figure and beside
perfsleuth's own estimate. Long (K2 builds take
minutes on 2 cores, each K2 run seconds): kept out of `make test`.

Nothing of K2 is in this repository. With --k2, give what you built yourself from
K2's sources (github.com/smartnic/superopt, against Debian's libz3-dev, C++20 for
char8_t): the command that runs it (`{out}` for the build folder), the source folder,
your build command (the `try build` contract: into $OUT, honouring $CXXFLAGS), and
your vector<char8_t> patch. Without --k2, the stand-ins of examples/k2 run instead:
examples/bin/hotlib (a stripped library holding most of the time) and
examples/k2/bits (a vector<bool> copy loop and char8.diff).

Usage:
  .venv/bin/python bench/k2_case_study.py [--runs 10]
  .venv/bin/python bench/k2_case_study.py --k2 --cmd 'run-k2.sh {out} 20000' \\
      --installed /path/to/built/k2 --source ~/superopt --build 'make ... OUT=$OUT' \\
      --patch k2-char8.diff [--runs 10]
Writes bench/out/k2_case_study.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "k2_case_study.json"
# The post's averages (min-max) over its benchmarks, as speed-ups.
POST = {
    "allocator": "mimalloc 1.08x (1.05-1.12)",
    "patch": "vector<char8_t> 1.31x over mimalloc (1.12-1.57)",
    "dependency": "Z3 PGO+LTO 1.10x (1.00-1.17)",
    "build": "K2 PGO 1.03x (1.00-1.09)",
    "combined": "1.62x (1.42-1.91), Z3's PGO+LTO included",
}
FINDING_OF = {
    "allocator": "allocator.glibc",
    "patch": "container.vector-bool",
    "dependency": "library.hot",
    "build": "build.options-hint",
}
STEPS = ("allocator", "patch", "dependency", "build", "combined")
COMBINED = ("allocator", "patch", "build", "dependency")  # what try combined can put together


def perfsleuth(store: Path, words: list[str]) -> dict[str, Any]:
    """`perfsleuth COMMAND [EXPERIMENT] --store S --format json ARGS`, its document."""
    at = 2 if words[0] == "try" else 1
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = [sys.executable, "-m", "perfsleuth.cli", "--quiet", *words[:at], "--store",
                str(store), "--format", "json", "-o", out.name, *words[at:]]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{shlex.join(argv)} failed: {done.stderr.strip()}")
        return json.loads(Path(out.name).read_text())


def stand_ins(runs: int) -> dict[str, list[str]]:
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples")], check=True)
    bits = ROOT / "examples" / "k2" / "bits"
    solver = f"cc $CFLAGS -shared -fPIC -o $OUT/libsolver.so {ROOT}/examples/k2/solver.c $LDFLAGS"
    hotlib = [str(ROOT / "examples" / "bin" / "hotlib"), "3000"]
    built = OUT.parent / "k2-bits"
    built.mkdir(parents=True, exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(bits), f"OUT={built}"], check=True)
    patch = ["--source", str(bits), "--build", "make -s"]
    return {
        "record": ["run", "--", *hotlib],
        "record-bits": ["run", "--", str(built / "inout")],
        "allocator": ["try", "allocator", "--runs", str(runs), "--", *hotlib],
        "patch": ["try", "patch", "--runs", str(runs), *patch, str(bits / "char8.diff"),
                  "--", "{out}/inout"],
        "dependency": ["try", "build", "--runs", str(runs), "--dependency", "libsolver.so",
                       "--build", solver, "--variants", "lto,pgo", "--", *hotlib],
        "combined": ["try", "combined", "--runs", str(runs), *patch, "--allocator",
                     "mimalloc", "--patch", str(bits / "char8.diff"), "--variant", "pgo-lto",
                     "--", "{out}/inout"],
    }  # fmt: skip


def k2(args: argparse.Namespace) -> dict[str, list[str]]:
    run = [w.replace("{out}", args.installed) for w in shlex.split(args.cmd)]
    built = ["--source", args.source, "--build", args.build]
    in_source = f"cd {shlex.quote(args.source)} && {args.build}"  # try build runs it here
    steps = {
        "record": ["run", "--", *run],
        "allocator": ["try", "allocator", "--runs", str(args.runs), "--", *run],
        "patch": ["try", "patch", "--runs", str(args.runs), *built, args.patch,
                  "--", *shlex.split(args.cmd)],
        "build": ["try", "build", "--runs", str(args.runs), "--build", in_source,
                  "--variants", "lto,pgo,pgo-lto", "--", *shlex.split(args.cmd)],
        "combined": ["try", "combined", "--runs", str(args.runs), *built, "--allocator",
                     args.allocator, "--patch", args.patch, "--variant", "pgo-lto",
                     "--", *shlex.split(args.cmd)],
    }  # fmt: skip
    if args.dependency_build:
        library = ["--dependency", args.dependency]
        built_library = [*library, "--build", args.dependency_build]
        steps["dependency"] = ["try", "build", "--runs", str(args.runs), *built_library,
                               "--variants", "lto,pgo", "--", *run]  # fmt: skip
        at = steps["combined"].index("--")
        steps["combined"][at:at] = [*library, "--dependency-build", args.dependency_build,
                                    "--dependency-variant", "pgo-lto"]  # fmt: skip
    return steps


def best(doc: dict[str, Any]) -> dict[str, Any]:
    measured = [v for v in doc["variants"] if v.get("ratio")]
    return max(measured, key=lambda v: v["ratio"]) if measured else {"name": "none"}


def combined_estimate(estimates: dict[str, float], argv: list[str]) -> float | None:
    """The estimates of the combined fixes' findings compounded: each saves its share of
    what the ones before it left (the library's only where the run rebuilt it)."""
    steps = [s for s in COMBINED if s != "dependency" or "--dependency" in argv]
    found = [estimates[FINDING_OF[s]] for s in steps if FINDING_OF[s] in estimates]
    return 1 - math.prod(1 - e for e in found) if found else None


def row(step: str, doc: dict[str, Any], estimates: dict[str, float], argv: list[str]) -> str:
    top = doc["variants"][-1] if step == "combined" else best(doc)
    ratio = top.get("ratio")
    measured = f"{top['name']} {ratio:.2f}x ({top['verdict']}, {doc['metric']})" if ratio else "-"
    gain = f"{100 * (1 - 1 / ratio):.1f}%" if ratio else "-"
    estimate = (
        combined_estimate(estimates, argv)
        if step == "combined"
        else estimates.get(FINDING_OF.get(step, ""))
    )
    said = f"{100 * estimate:.1f}%" if estimate is not None else "-"
    return f"| {step} | {measured} | {gain} | {said} | {POST[step]} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--k2", action="store_true", help="your own K2 build (see above)")
    parser.add_argument("--cmd", help="runs K2 from the build folder {out}")
    parser.add_argument("--installed", help="the folder of your K2 build as it is")
    parser.add_argument("--source", help="K2's source folder (for try patch)")
    parser.add_argument("--build", help="your K2 build command ($OUT contract)")
    parser.add_argument("--patch", help="your vector<bool> -> vector<char8_t> patch")
    parser.add_argument("--allocator", default="mimalloc", help="the combined run's allocator")
    parser.add_argument("--dependency", default="libz3.so.4")
    parser.add_argument("--dependency-build", help="builds Z3 from source into $OUT")
    args = parser.parse_args()
    steps = k2(args) if args.k2 else stand_ins(args.runs)
    results: dict[str, Any] = {}
    estimates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="k2-case-") as tmp:
        for step, argv in steps.items():
            doc = perfsleuth(Path(tmp) / "store", argv)
            results[step] = doc
            for f in doc.get("findings", []):
                estimates.setdefault(f["rule"], f["estimated_gain"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1))
    print("| step | measured (best variant) | gain | perfsleuth's estimate | the post |")
    print("| --- | --- | --- | --- | --- |")
    for step in STEPS:
        if step in results:
            print(row(step, results[step], estimates, steps[step]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
