"""The advisor on real recordings: each example's planted problem is in the top 3.

Every program in examples/advisor/ is run with `perfsleuth run --format json`
(perf really samples it); the clean program gets no high-confidence finding.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLANTED = {
    "map_alloc": "allocator.glibc",
    "zlib_loop": "compression.zlib",
    "exceptions_flow": "exceptions.control-flow",
    "regex_loop": "regex.std",
    "vector_bool": "container.vector-bool",
    "qsort_ints": "sort.qsort",
    "o0_build": "build.unoptimized",
    "printf_format": "formatting.printf",
}


def perfsleuth(command: str, *args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", command, "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def advised(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """program -> the `perfsleuth run --format json` document, one store for all."""
    store = tmp_path_factory.mktemp("advisor") / "store"
    docs = {}
    for program in [*PLANTED, "clean"]:
        out = perfsleuth(
            "run", "--format", "json", "--", str(examples_built / program), store=store
        )
        assert out.returncode == 0, out.stderr
        docs[program] = json.loads(out.stdout[out.stdout.index("{") :])
    docs["_store"] = {"path": str(store)}
    return docs


@pytest.mark.parametrize("program", sorted(PLANTED))
def test_planted_problem_is_in_the_top_3(advised: dict[str, dict], program: str) -> None:
    findings = advised[program]["findings"]
    top3 = [f["rule"] for f in findings[:3]]
    assert PLANTED[program] in top3, top3
    planted = next(f for f in findings if f["rule"] == PLANTED[program])
    assert 0 < planted["estimated_gain"] <= planted["share"] <= 1
    assert planted["confidence"] >= 0.6
    assert planted["evidence"] and planted["suggestion"]


def test_clean_program_has_no_high_confidence_finding(advised: dict[str, dict]) -> None:
    confident = [f["rule"] for f in advised["clean"]["findings"] if f["confidence"] >= 0.7]
    assert confident == []


def test_findings_point_at_the_calling_source_line(advised: dict[str, dict]) -> None:
    regex = next(f for f in advised["regex_loop"]["findings"] if f["rule"] == "regex.std")
    assert regex["file"].endswith("examples/advisor/regex_loop.cc")
    assert regex["line"] > 0


def test_allocator_finding_gives_the_preload_line(advised: dict[str, dict]) -> None:
    alloc = next(f for f in advised["map_alloc"]["findings"] if f["rule"] == "allocator.glibc")
    assert alloc["fix"]["command"].startswith("LD_PRELOAD=/")
    assert alloc["fix"]["command"].endswith("examples/bin/map_alloc")


def test_findings_are_stored_with_the_run(advised: dict[str, dict]) -> None:
    from perfsleuth.store.runs import Store

    store = Store(advised["_store"]["path"])
    run_id = int(advised["o0_build"]["run"])
    stored = store.documents(run_id, "findings")["advisor"]
    assert "build.unoptimized" in {f["rule"] for f in stored}


def test_sarif_validates_against_the_schema(advised: dict[str, dict], tmp_path: Path) -> None:
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text())
    store = Path(advised["_store"]["path"])
    for ref in ("1", "2", "3"):
        out = perfsleuth("advise", ref, "--all", "--format", "sarif", store=store)
        assert out.returncode == 0, out.stderr
        log = json.loads(out.stdout)
        jsonschema.validate(log, schema)
        results = log["runs"][0]["results"]
        assert results and all(r["ruleId"] for r in results)
    located = [r for r in results if "locations" in r]
    assert located[0]["locations"][0]["physicalLocation"]["region"]["startLine"] > 0


def test_markdown_and_text_reports(advised: dict[str, dict]) -> None:
    store = Path(advised["_store"]["path"])
    run_id = advised["qsort_ints"]["run"]
    markdown = perfsleuth("advise", run_id, "--format", "markdown", store=store)
    assert "| 1 |" in markdown.stdout and "qsort" in markdown.stdout
    text = perfsleuth("advise", run_id, store=store)
    assert "std::sort" in text.stdout
    assert max(len(line.rstrip()) for line in text.stdout.splitlines()) <= 100


def test_src_pointing_nowhere_is_an_error(advised: dict[str, dict], tmp_path: Path) -> None:
    store = Path(advised["_store"]["path"])
    out = perfsleuth("advise", "--src", str(tmp_path / "nowhere"), store=store)
    assert out.returncode == 2
    assert "--src" in out.stderr and "nowhere" in out.stderr and "Traceback" not in out.stderr


def test_bad_rules_file_is_reported_before_recording(examples_built: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nid = "x"\nfunction = ["malloc"]\n')
    store = tmp_path / "store"
    out = perfsleuth("run", "--rules", str(rules), "--", str(examples_built / "clean"), store=store)
    assert out.returncode == 2
    assert f"{rules}:3" in out.stderr and "'function'" in out.stderr
    assert not (store / "runs.duckdb").exists()


def test_store_rules_file_is_read(advised: dict[str, dict], tmp_path: Path) -> None:
    store = Path(advised["_store"]["path"])
    (store / "rules.toml").write_text(
        "[[rule]]\n"
        'id = "custom.collatz"\nkind = "library-replacement"\n'
        'title = "{share} in collatz"\nfunctions = ["^collatz_steps$"]\n'
        'replacement = "a lookup table"\napply = "memoise"\ncode_change = true\n'
        'saving = 0.5\nsaving_range = [0.2, 0.8]\nsource = "test"\nconfidence = 0.5\n'
    )
    try:
        out = perfsleuth("advise", advised["clean"]["run"], "--format", "json", store=store)
    finally:
        (store / "rules.toml").unlink()
    assert "custom.collatz" in {f["rule"] for f in json.loads(out.stdout)["findings"]}
