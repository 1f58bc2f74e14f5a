"""`perfsleuth cache calibrate` on this machine: the real pointer chase."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from perfsleuth.cpu_cache_projections import calibrate
from perfsleuth.cpu_cache_projections.model import machine_geometry

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
        assert f"knees of {calibrate.TLB_SWEEPS} sweeps: " in doc["evidence"]
    else:
        assert doc["evidence"]


def test_calibrate_measures_the_llc_from_the_level_below_to_twice_its_size(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "cache", "calibrate"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    doc = json.loads((tmp_path / "perfsleuth" / "calibration.json").read_text())
    geometry = machine_geometry()
    curve = {int(size): ns for size, ns in doc["llc_curve_ns"].items()}
    assert sorted(curve) == calibrate.llc_sweep(geometry)
    assert doc["llc_nominal_bytes"] == geometry.levels[-1].size
    # past twice the LLC, every load goes to memory: slower than within the level below
    assert curve[max(curve)] > curve[min(curve)]
    effective = doc["llc_effective_bytes"]
    if effective is not None:
        assert min(curve) < effective < max(curve)
        assert f"{effective / (1 << 20):.2f} MiB effective" in done.stdout
        assert f"knees of {calibrate.LLC_SWEEPS} sweeps: " in doc["llc_evidence"]
    else:
        assert "LLC: not measured" in done.stdout


def test_the_walks_chase_times_the_same_lines_on_both_page_sizes_in_turns():
    chase = calibrate.native()
    if calibrate.huge_pages_mode() == "never":
        with pytest.raises(OSError, match="no 2 MiB pages"):
            chase.chase_walks_ns(256, 1000, 3)
        return
    timed = chase.chase_walks_ns(256, 1000, 3)
    # each page size was chased at least once (its fastest round starts at infinity);
    # how long it took is the bench's to say (bench/tlb_walks.py), not a test's
    assert len(timed) == 3 and all(isinstance(t, float) and math.isfinite(t) for t in timed)
    with pytest.raises(ValueError, match="pages >= 2"):
        chase.chase_walks_ns(1, 1000, 3)
    with pytest.raises(ValueError, match="pairs >= 1"):
        chase.chase_walks_ns(256, 1000, 0)
