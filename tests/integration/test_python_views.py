"""Python runs in the views, through the CLI: callers, callees, annotate (the Python
source lines), and diff of two Python runs, on real `perfsleuth record -- python3 ...`
runs of the examples (py-spy underneath)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"
JSON_HEAVY = EXAMPLES / "json_heavy.py"
PERFSLEUTH = [sys.executable, "-m", "perfsleuth.cli"]


def perfsleuth(store: Path, verb: str, *args: str) -> str:
    cmd = [*PERFSLEUTH, verb, "--store", str(store), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run 1: json_heavy.py; run 2: zlib_mixed.py; both small, both in python mode."""
    store = tmp_path_factory.mktemp("python-views") / "store"
    for script in (JSON_HEAVY, EXAMPLES / "zlib_mixed.py"):
        perfsleuth(store, "record", "--", sys.executable, str(script), "8")
    return store


def as_json(store: Path, *args: str) -> dict:
    return json.loads(perfsleuth(store, *args, "--format", "json"))


def test_callers_and_callees_of_a_python_function(store: Path) -> None:
    (serialize,) = as_json(store, "callers", "^serialize$", "1")["functions"]
    assert [c["function"] for c in serialize["callers"]] == ["main"]
    assert serialize["callers"][0]["share"] == 1.0
    (called,) = as_json(store, "callees", "^serialize$", "1")["functions"]
    assert [c["function"] for c in called["callees"]] == ["dumps"]  # json's, below it
    assert called["total"] > 0.2


def test_annotate_shows_the_python_source_lines(store: Path) -> None:
    (file,) = as_json(store, "annotate", "^serialize$", "1")["files"]
    assert file["path"] == str(JSON_HEAVY)
    lines = {line["line"]: line for line in file["lines"]}
    assert lines[29]["source"] == "def serialize(orders):"
    assert lines[30]["source"] == "    return json.dumps(orders)"
    # the call site carries (nearly all: a sample may land on the def line) the time
    assert lines[30]["total"] >= 0.9 * file["total"] and file["total"] > 0.2
    text = perfsleuth(store, "annotate", "^parse$", "1")
    assert "return json.loads(text)" in text and "json_heavy.py" in text


def test_diff_of_two_python_runs_pairs_python_functions_by_module(store: Path) -> None:
    diff = as_json(store, "diff", "1", "2", "-n", "0")
    rows = {(r["function"], r["dso"]): r for r in diff["rows"]}
    serialize = rows[("serialize", "[python:json_heavy]")]
    assert serialize["total_a"] > 0.2 and serialize["total_b"] == 0
    pack_logs = rows[("pack_logs", "[python:zlib_mixed]")]
    assert pack_logs["total_a"] == 0 and pack_logs["total_b"] > 0.2
    # each script's main is its own module's (site.py's main may be sampled at start-up too)
    main = {dso: r for (function, dso), r in rows.items() if function == "main"}
    json_main, zlib_main = main["[python:json_heavy]"], main["[python:zlib_mixed]"]
    assert json_main["total_a"] > 0.2 and json_main["total_b"] == 0
    assert zlib_main["total_b"] > 0.2 and zlib_main["total_a"] == 0
    # no frame is on more stacks than the run has
    assert all(r["total_a"] <= 1 + 1e-9 and r["total_b"] <= 1 + 1e-9 for r in diff["rows"])
