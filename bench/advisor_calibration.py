"""The advisor against its labelled set: is the planted problem in the top 3, and how
does each finding's estimated gain compare with its fix's measured speed-up?

bench/advisor_set/manifest.toml lists the programs; each source holds the planted
problem and its fix (-DFIXED for C/C++, --cfg fixed for Rust, FIXED=1 for Python).
For each: build both, `perfsleuth run --format json` the slow one into a scratch
store, and time both with hyperfine (the measured gain is 1 - fixed/slow). Then per
kind of problem: the median estimate (the expected finding's estimated_gain) against
the median measured gain, and the saving that would have matched (measured / share),
from which the rules' `saving` figures (rules/*.toml) are fitted.

The machine is shared: hyperfine's times under load are noisy (--runs, default 5).

Usage: .venv/bin/python bench/advisor_calibration.py [--runs 5] [--only ID,ID]
Writes bench/out/advisor_calibration.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "bench" / "advisor_set"
OUT = ROOT / "bench" / "out" / "advisor_calibration.json"
PERFSLEUTH = [sys.executable, "-m", "perfsleuth.cli"]
TOP = 3
TARGET_TOP3 = 0.9
TARGET_ERROR = 0.25


def build(problem: dict, work: Path) -> tuple[list[str], list[str], dict[str, str]]:
    """(slow command, fixed command, environment of the fixed one)."""
    source = SET / problem["source"]
    slow, fixed = work / f"{problem['id']}.slow", work / f"{problem['id']}.fixed"
    suffix = source.suffix
    if suffix == ".py":
        return ["python3", str(source)], ["python3", str(source)], {"FIXED": "1"}
    if suffix == ".c":
        compile_ = ["gcc", "-O2", "-g", "-pthread", str(source)]
        flag = ["-DFIXED"]
    elif suffix == ".cc":
        compile_ = ["g++", "-std=c++17", "-O2", "-g", "-pthread", str(source)]
        flag = ["-DFIXED"]
    else:
        compile_ = ["rustc", "-O", "-g", "--edition", "2021", str(source)]
        flag = ["--cfg", "fixed"]
    subprocess.run([*compile_, "-o", str(slow)], check=True)
    subprocess.run([*compile_, *flag, "-o", str(fixed)], check=True)
    return [str(slow)], [str(fixed)], {}


def advise(command: list[str], store: Path) -> list[dict]:
    """The ranked findings of `perfsleuth run` (the program's own output is dropped)."""
    out = store.with_suffix(".findings.json")
    done = subprocess.run(
        [*PERFSLEUTH, "run", "--store", str(store), "--format", "json", "-o", str(out),
         "--", *command],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    try:
        return json.loads(out.read_text())["findings"]
    except (OSError, json.JSONDecodeError, KeyError):
        print(done.stderr[-2000:], file=sys.stderr)
        return []


def measure(slow: list[str], fixed: list[str], runs: int) -> float:
    """1 - fixed/slow, from hyperfine's fastest runs (the least disturbed by the other
    work on a shared machine)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "1", "--runs", str(runs), "--export-json", out.name,
             "--command-name", "slow", " ".join(slow),
             "--command-name", "fixed", " ".join(fixed)],
            check=True, capture_output=True,
        )  # fmt: skip
        results = json.loads(Path(out.name).read_text())["results"]
    slow_t, fixed_t = (min(r["times"]) for r in results)
    return 1.0 - fixed_t / slow_t


def fixed_command(fixed: list[str], env: dict[str, str]) -> list[str]:
    """The fixed program's command, its switch (FIXED=1) set through env(1)."""
    return ["env", *(f"{k}={v}" for k, v in env.items()), *fixed] if env else fixed


def evaluate(problem: dict, work: Path, runs: int) -> dict:
    try:
        slow, fixed, env = build(problem, work)
    except subprocess.CalledProcessError as e:
        sys.exit(f"{problem['id']}: the build failed ({e})")
    findings = advise(slow, work / "store")
    rules = [f["rule"] for f in findings]
    rank = next((i + 1 for i, r in enumerate(rules) if r in problem["expect"]), 0)
    hit = findings[rank - 1] if rank else None
    measured = measure(slow, fixed_command(fixed, env), runs)
    return {
        "id": problem["id"],
        "kind": problem["kind"],
        "rank": rank,
        "top": rules[:TOP],
        "rule": hit["rule"] if hit else "",
        "share": hit["share"] if hit else 0.0,
        "estimated": hit["estimated_gain"] if hit else 0.0,
        "range": [hit.get("gain_low", 0.0), hit.get("gain_high", 0.0)] if hit else [0.0, 0.0],
        "measured": measured,
    }


def replayed(rows: list[dict]) -> list[dict]:
    """The rows with each finding's estimate from the rules' current saving figures."""
    from perfsleuth.rules import load_classes, load_rules

    rules = {r.id: r for r in load_rules()} | {f"class.{c.id}": c for c in load_classes()}
    out = []
    for row in rows:
        rule = rules.get(row["rule"])
        if rule is not None:
            share = row["share"]
            low, high = rule.saving_range
            row = {**row, "estimated": share * rule.saving, "range": [share * low, share * high]}
        out.append(row)
    return out


def held_out(rows: list[dict]) -> list[dict]:
    """Leave-one-out: each program's estimate from a saving fitted without it. The saving
    of its finding's rule is the median measured/share of the other programs the same
    rule found; a rule no other program exercises takes the median over every other
    program (the prior a new kind of problem would get). Out-of-sample, where the
    rules' shipped savings were fitted on the whole set."""
    fitted = [r for r in rows if r["rank"] and r["share"] > 0]
    out = []
    for row in rows:
        if row not in fitted:
            out.append(row)
            continue
        others = [r for r in fitted if r is not row]
        same = [r["measured"] / r["share"] for r in others if r["rule"] == row["rule"]]
        pool = same or [r["measured"] / r["share"] for r in others]
        if not pool:  # the only program run (--only one id, no earlier results)
            out.append(row)
            continue
        saving = statistics.median(pool)
        share = row["share"]
        out.append({**row, "estimated": min(share, share * saving), "loo_saving": saving,
                    "loo_basis": "same rule" if same else "all others"})  # fmt: skip
    return out


def by_kind(rows: list[dict]) -> list[dict]:
    kinds: dict[str, list[dict]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append(row)
    table = []
    for kind, items in sorted(kinds.items()):
        found = [r for r in items if r["rank"]]
        estimated = statistics.median(r["estimated"] for r in found) if found else 0.0
        measured = statistics.median(r["measured"] for r in items)
        savings = [r["measured"] / r["share"] for r in found if r["share"] > 0]
        table.append(
            {
                "kind": kind,
                "programs": len(items),
                "estimated": estimated,
                "measured": measured,
                "error": abs(estimated - measured) / measured if measured > 0 else None,
                "fitted_saving": statistics.median(savings) if savings else None,
            }
        )
    return table


def within(kinds: list[dict]) -> list[dict]:
    return [k for k in kinds if k["error"] is not None and k["error"] <= TARGET_ERROR]


def report(rows: list[dict], kinds: list[dict], loo: list[dict]) -> None:
    print("| program | kind | rank | finding | share | estimate (range) | measured |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        low, high = r["range"]
        print(
            f"| {r['id']} | {r['kind']} | {r['rank'] or '-'} | {r['rule'] or ', '.join(r['top'])} "
            f"| {100 * r['share']:.0f}% | {100 * r['estimated']:.0f}% "
            f"({100 * low:.0f}-{100 * high:.0f}%) | {100 * r['measured']:.0f}% |"
        )
    print(
        "\n| kind | programs | median estimate | median measured | error | fitted saving "
        "| held-out estimate | held-out error |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, h in zip(kinds, loo, strict=True):
        print(
            f"| {k['kind']} | {k['programs']} | {100 * k['estimated']:.0f}% "
            f"| {100 * k['measured']:.0f}% | {_pct(k['error'])} | "
            f"{'-' if k['fitted_saving'] is None else format(k['fitted_saving'], '.2f')} "
            f"| {100 * h['estimated']:.0f}% | {_pct(h['error'])} |"
        )
    top3 = sum(1 for r in rows if r["rank"]) / len(rows)
    print(
        f"\nplanted problem in the top {TOP}: {sum(1 for r in rows if r['rank'])}/{len(rows)} "
        f"({100 * top3:.0f}%, target {100 * TARGET_TOP3:.0f}%); kinds whose median estimate is "
        f"within {100 * TARGET_ERROR:.0f}% of the measured gain: {len(within(kinds))}/{len(kinds)} "
        f"in-sample (the shipped savings, fitted on this set), {len(within(loo))}/{len(loo)} "
        "held out (leave-one-out: each program's saving fitted on the others)"
    )


def _pct(error: float | None) -> str:
    return "-" if error is None else f"{100 * error:.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="hyperfine runs per command")
    parser.add_argument("--only", default="", help="comma-separated problem ids")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="no recording: the last results' shares and measured gains, estimated again "
        "with the rules' current savings (after fitting them; in-sample)",
    )
    args = parser.parse_args()
    if args.replay:
        rows = replayed(json.loads(OUT.read_text())["problems"])
        report(rows, by_kind(rows), by_kind(held_out(rows)))
        return 0
    problems = tomllib.loads((SET / "manifest.toml").read_text())["problem"]
    if args.only:
        problems = [p for p in problems if p["id"] in args.only.split(",")]
    # --only runs some again and keeps the others' last results
    kept = json.loads(OUT.read_text())["problems"] if args.only and OUT.exists() else []
    rows = [r for r in kept if r["id"] not in {p["id"] for p in problems}]
    with tempfile.TemporaryDirectory(prefix="advisor-set-") as tmp:
        for problem in problems:
            row = evaluate(problem, Path(tmp), args.runs)
            print(f"{row['id']}: rank {row['rank']}, {row['top']}", file=sys.stderr)
            rows.append(row)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            OUT.write_text(json.dumps({"problems": rows}, indent=2))  # kept as it goes
    kinds, loo = by_kind(rows), by_kind(held_out(rows))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"problems": rows, "kinds": kinds, "held_out": loo}, indent=2))
    report(rows, kinds, loo)
    return 0 if all(r["rank"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
