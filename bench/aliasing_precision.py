#!/usr/bin/env python3
"""Benchmark: precision of `perfsleuth lint`'s aliasing findings on real C codebases
the analysis was not written for, against the verdicts judged by hand in
bench/aliasing_precision/judged.toml (issue 30: precision >= 0.8).

    .venv/bin/python bench/aliasing_precision.py [--work /tmp/perfsleuth-aliasing-precision]
        [--src /old/perfsleuth/src] [--codebase zlib ...]

Each codebase is fetched from its registry at the pinned version with the registry's
own client (`cargo fetch` for crates.io `-sys` crates, `pip download` for PyPI
sdists) into --work, given a compile_commands.json of its build's files and flags
(compiler `cc`), and linted (`--no-cache`) with the perfsleuth code under --src
(default: this checkout's). Each finding is looked up by codebase, file, line,
function and rule among the judged ones; the table gives, per codebase and over all:
  findings    what lint reported (and how many of them were judged)
  precision   judged findings that are true (the reload is real) / judged findings,
              over all findings and over the confident ones (>= 0.6)
  impact      judged findings that are true with measurable impact / judged
  quiet       matched loops not reported because their compiler's code shows no
              cost (lint's "not reported: ..." notes, listed under the table)
A finding nobody judged (new after a change) is listed, not counted: judge it and add
it to judged.toml. Writes bench/out/aliasing_precision.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JUDGED = ROOT / "bench" / "aliasing_precision" / "judged.toml"
OUT = ROOT / "bench" / "out"
CONFIDENT = 0.6
TRUE_VERDICTS = ("true-impact", "true-no-impact")
QUIET_NOTE = "not reported: "


def fetch_crates(codebases: dict[str, dict], work: Path) -> None:
    """Download the crates.io packages with cargo and unpack them under work/src."""
    crates = {
        c["package"]: c["version"] for c in codebases.values() if c["registry"] == "crates.io"
    }
    if not crates or all(_unpacked(work, p, v).is_dir() for p, v in crates.items()):
        return
    project = work / "cargo"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "src" / "main.rs").write_text("fn main() {}\n")
    dependencies = "\n".join(f'{name} = "={version}"' for name, version in crates.items())
    (project / "Cargo.toml").write_text(
        f'[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
        f"[dependencies]\n{dependencies}\n"
    )
    subprocess.run(["cargo", "fetch", "--quiet"], cwd=project, check=True)
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    for name, version in crates.items():
        found = sorted(cargo_home.glob(f"registry/cache/*/{name}-{version}.crate"))
        if not found:
            sys.exit(f"cargo fetched no {name}-{version}.crate under {cargo_home}")
        _unpack(found[0], work / "src")


def fetch_sdists(codebases: dict[str, dict], work: Path) -> None:
    """Download the PyPI sdists with pip and unpack them under work/src."""
    for codebase in codebases.values():
        name, version = codebase["package"], codebase["version"]
        if codebase["registry"] != "pypi" or _unpacked(work, name, version).is_dir():
            continue
        folder = work / "sdists"
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        pip += ["--no-binary", ":all:", f"{name}=={version}", "-d", str(folder)]
        subprocess.run(pip, check=True)
        _unpack(folder / f"{name}-{version}.tar.gz", work / "src")


def _unpacked(work: Path, name: str, version: str) -> Path:
    return work / "src" / f"{name}-{version}"


def _unpack(archive: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def write_database(codebase: dict, work: Path) -> Path:
    """compile_commands.json at the codebase's root: its sources with its flags."""
    root = codebase_root(codebase, work)
    files = sorted(
        str(path.relative_to(root))
        for pattern in codebase["sources"]
        for path in root.glob(pattern)
        if not any(part in str(path) for part in codebase.get("exclude", []))
    )
    entries = [
        {"directory": str(root), "file": f, "arguments": ["cc", *codebase["flags"], "-c", f]}
        for f in files
    ]
    database = root / "compile_commands.json"
    database.write_text(json.dumps(entries, indent=1))
    return database


def codebase_root(codebase: dict, work: Path) -> Path:
    return (_unpacked(work, codebase["package"], codebase["version"]) / codebase["root"]).resolve()


def lint(database: Path, src: Path, scratch: Path) -> dict:
    """`perfsleuth lint`'s document (findings, notes) over the database, with the code
    under src."""
    output = scratch / "lint.json"
    perfsleuth = [
        sys.executable,
        "-c",
        "import sys; from perfsleuth.cli import main; sys.exit(main())",
    ]
    command = [*perfsleuth, "lint", "--quiet", "--no-cache", "--store", str(scratch)]
    command += ["--compile-commands", str(database), "--format", "json", "-o", str(output)]
    env = {**os.environ, "PYTHONPATH": str(src), "XDG_CACHE_HOME": str(scratch / "cache")}
    subprocess.run(command, cwd=database.parent, env=env, check=True)
    return json.loads(output.read_text())


def score(name: str, doc: dict, root: Path, judged: list[dict]) -> dict:
    """Precision of one codebase's findings against its judged verdicts, and its
    loops left out for showing no cost."""
    verdicts = {
        (j["file"], j["line"], j["function"], j["rule"]): j for j in judged if j["codebase"] == name
    }
    rows = []
    for finding in doc["findings"]:
        key = (os.path.relpath(finding["file"], root), finding["line"], finding["function"])
        judgement = verdicts.get((*key, finding["rule"]))
        rows.append(
            {
                "file": key[0],
                "line": key[1],
                "function": key[2],
                "rule": finding["rule"],
                "confidence": finding["confidence"],
                "verdict": judgement["verdict"] if judgement else None,
            }
        )
    quiet = [note for note in doc["notes"] if note.startswith(QUIET_NOTE)]
    return {
        "all": _precision(rows),
        "confident": _precision(rows, CONFIDENT),
        "findings": rows,
        "quiet": quiet,
    }


def _precision(rows: list[dict], floor: float = 0.0) -> dict:
    kept = [r for r in rows if r["confidence"] >= floor]
    judged = [r for r in kept if r["verdict"] is not None]
    true = [r for r in judged if r["verdict"] in TRUE_VERDICTS]
    impact = [r for r in judged if r["verdict"] == "true-impact"]
    return {
        "findings": len(kept),
        "judged": len(judged),
        "true": len(true),
        "precision": round(len(true) / len(judged), 3) if judged else None,
        "impact_precision": round(len(impact) / len(judged), 3) if judged else None,
    }


def table(results: dict[str, dict]) -> str:
    lines = [
        "| codebase | findings (judged) | precision, all | confident >= 0.6 (judged) "
        "| precision, confident | true with impact, all | quiet |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, result in results.items():
        every, confident = result["all"], result["confident"]
        lines.append(
            f"| {name} | {every['findings']} ({every['judged']}) | {_ratio(every)} "
            f"| {confident['findings']} ({confident['judged']}) | {_ratio(confident)} "
            f"| {every['impact_precision']} | {len(result['quiet'])} |"
        )
    return "\n".join(lines)


def _ratio(counts: dict) -> str:
    if not counts["judged"]:
        return "-"
    return f"{counts['precision']:.2f} ({counts['true']}/{counts['judged']})"


def total(results: dict[str, dict]) -> dict:
    rows = [row for result in results.values() for row in result["findings"]]
    quiet = [note for result in results.values() for note in result["quiet"]]
    return {
        "all": _precision(rows),
        "confident": _precision(rows, CONFIDENT),
        "findings": rows,
        "quiet": quiet,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/perfsleuth-aliasing-precision"))
    parser.add_argument(
        "--src", type=Path, default=ROOT / "src", help="perfsleuth code to lint with"
    )
    parser.add_argument("--codebase", action="append", help="only these (default: all)")
    args = parser.parse_args()
    data = tomllib.loads(JUDGED.read_text())
    codebases = {
        name: spec
        for name, spec in data["codebase"].items()
        if not args.codebase or name in args.codebase
    }
    args.work.mkdir(parents=True, exist_ok=True)
    fetch_crates(codebases, args.work)
    fetch_sdists(codebases, args.work)
    results = {}
    for name, codebase in codebases.items():
        database = write_database(codebase, args.work)
        with tempfile.TemporaryDirectory(prefix="lint-", dir=args.work) as scratch:
            doc = lint(database, args.src.resolve(), Path(scratch))
        results[name] = score(name, doc, codebase_root(codebase, args.work), data["finding"])
    results["all"] = total(results)
    print(table(results))
    for name, result in results.items():
        if name == "all":
            continue
        for row in result["findings"]:
            if row["verdict"] is None:
                print(
                    f"not judged: {name} {row['file']}:{row['line']} {row['function']} "
                    f"{row['rule']} {row['confidence']}"
                )
        for note in result["quiet"]:
            print(f"{name}: {note}")
    OUT.mkdir(parents=True, exist_ok=True)
    document = {"src": str(args.src), "results": results}
    (OUT / "aliasing_precision.json").write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
