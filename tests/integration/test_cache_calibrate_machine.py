"""`perfsleuth cache calibrate` on this machine: the real pointer chase."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perfsleuth.cache import calibrate

pytestmark = pytest.mark.integration


def test_calibrate_measures_the_sweep_and_keeps_it_for_this_machine(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "cache", "calibrate", "--format", "json"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    doc = json.loads(done.stdout)
    curve = {int(pages): ns for pages, ns in doc["curve_ns"].items()}
    assert sorted(curve) == calibrate.SWEEP
    # one dependent load per step: more than a cycle, less than a trip to a far node
    assert all(0.2 < ns < 1000 for ns in curve.values())
    saved = tmp_path / "perfsleuth" / "calibration.json"
    assert json.loads(saved.read_text())["fingerprint"] == calibrate.fingerprint()
    reach = doc["tlb_reach_pages"]
    if reach is not None:
        assert curve[calibrate.SWEEP[-1]] > curve[calibrate.SWEEP[0]]
        assert "one per page" in doc["evidence"]
    else:
        assert doc["evidence"]
