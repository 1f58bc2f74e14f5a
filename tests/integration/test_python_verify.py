"""The orjson proof (`--verify`, kind python-json), run for real: the json example recorded
with py-spy, then run as is and with the shim (experiments/python_shim.py) through the
experiments runner, 10 pairs of a small run each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "json_heavy.py"
PERFSLEUTH = [sys.executable, "-m", "perfsleuth.cli"]
ROUNDS = "5"  # about a tenth of the example's default work per run


def test_orjson_shim_is_measured_faster_with_its_confidence_interval(tmp_path: Path) -> None:
    pytest.importorskip("orjson")  # the venv's interpreter runs the command
    out = tmp_path / "run.json"
    cmd = [*PERFSLEUTH, "run", "--store", str(tmp_path / "store"), "--verify"]
    cmd += ["--format", "json", "-o", str(out), "--", sys.executable, str(EXAMPLE), ROUNDS]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    findings = {f["rule"]: f for f in json.loads(out.read_text())["findings"]}
    verified = findings["python.json"]["verified"]
    assert verified["variant"] == "orjson" and verified["metric"] in ("time", "cpu")
    if verified["metric"] == "cpu":  # chosen on a busy machine, and said
        assert "the machine is busy" in verified["summary"]
    assert verified["runs"] == 10  # pairs where both sides exited 0 (the default verify_runs)
    assert verified["verdict"] == "faster", verified["summary"]
    low, high = verified["ci95"]
    assert 1 < low <= verified["ratio"] <= high, verified
    assert 0 <= verified["p_value"] < 0.05
    assert verified["baseline"] and verified["candidate"] and verified["experiment"]
    assert "orjson" in verified["summary"]
    # the shim was loaded by the candidate side: it left its report beside it
    shim = tmp_path / "store" / "shims" / "json-orjson"
    assert "orjson" in (shim / "loaded.txt").read_text()
