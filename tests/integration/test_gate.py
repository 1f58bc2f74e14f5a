"""perfsleuth gate under real valgrind: exit codes, baseline files, build-ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

KEYS_SOURCE = Path(__file__).resolve().parents[2] / "examples" / "counts" / "keys.c"


def gate(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "gate", "--store", str(store), *args],
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def baseline(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline file exported from a count run of keys."""
    folder = tmp_path_factory.mktemp("gate")
    store = folder / "store"
    subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(store)]
        + ["--mode", "count", "--", str(examples_built / "keys")],
        check=True,
        capture_output=True,
    )
    out = folder / "baseline.json"
    done = gate(store, "--export", "latest", "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_baseline_file_is_small_and_names_the_binary(baseline: Path) -> None:
    doc = json.loads(baseline.read_text())
    assert doc["executable"] == "keys" and len(doc["build_id"]) == 40
    assert doc["total"] > 10_000_000
    assert baseline.stat().st_size < 20_000


def test_same_workload_passes(baseline: Path, examples_built: Path, tmp_path: Path) -> None:
    done = gate(tmp_path, "--baseline", str(baseline), "--", str(examples_built / "keys"))
    assert done.returncode == 0, done.stderr
    assert "\nPASS: " in done.stdout


def test_more_work_fails_past_the_threshold(
    baseline: Path, examples_built: Path, tmp_path: Path
) -> None:
    keys = str(examples_built / "keys")
    report = tmp_path / "gate.json"
    done = gate(
        tmp_path,
        "--baseline",
        str(baseline),
        "--format",
        "json",
        "-o",
        str(report),
        "--",
        keys,
        "1020000",
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(report.read_text())
    assert not doc["passed"] and doc["change"] > 0.005
    assert doc["changes"][0]["function"] in ("main", "keys_equal")
    allowed = gate(
        tmp_path, "--baseline", str(baseline), "--max-increase", "5%", "--", keys, "1020000"
    )
    assert allowed.returncode == 0, allowed.stderr


def test_another_program_is_refused(baseline: Path, examples_built: Path, tmp_path: Path) -> None:
    done = gate(tmp_path, "--baseline", str(baseline), "--", str(examples_built / "clean"))
    assert done.returncode == 2
    assert "recorded from keys (build-id" in done.stderr and "not clean" in done.stderr
    assert "another program" in done.stderr
    assert not tmp_path.joinpath("runs.duckdb").exists()


def test_a_build_under_another_name_is_the_same_program(
    baseline: Path, examples_built: Path, tmp_path: Path
) -> None:
    """SQLite's workflow: the planted change built as another file (keys-split: keys's
    early-return function split into a fast path and a slow one)."""
    report = tmp_path / "gate.json"
    split = str(examples_built / "keys-split")
    done = gate(
        tmp_path, "--baseline", str(baseline), "--format", "json", "-o", str(report), "--", split
    )
    assert "recorded from keys; keys-split defines the functions holding" in done.stderr
    assert "another build of the same program" in done.stderr
    assert done.returncode == 0, done.stderr
    doc = json.loads(report.read_text())
    assert doc["passed"] and doc["change"] < -0.05  # the split saves pushes and pops


def test_another_build_is_noted_or_refused(baseline: Path, tmp_path: Path) -> None:
    rebuilt = tmp_path / "keys"
    subprocess.run(["gcc", "-O1", "-g", "-o", str(rebuilt), str(KEYS_SOURCE)], check=True)
    noted = gate(tmp_path / "a", "--baseline", str(baseline), "--", str(rebuilt))
    assert "has build-id" in noted.stderr and "comparing two builds" in noted.stderr
    assert noted.returncode in (0, 1)
    refused = gate(tmp_path / "b", "--same-build", "--baseline", str(baseline), "--", str(rebuilt))
    assert refused.returncode == 2
    assert "--same-build refuses a different build" in refused.stderr


def test_bad_threshold_and_bad_baseline_file(baseline: Path, tmp_path: Path) -> None:
    bad = gate(tmp_path, "--baseline", str(baseline), "--max-increase", "lots", "--", "true")
    assert bad.returncode == 2 and "--max-increase" in bad.stderr
    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    done = gate(tmp_path, "--baseline", str(junk), "--", "true")
    assert done.returncode == 2 and "not a perfsleuth baseline" in done.stderr
    valgrinds = tmp_path / "cachegrind.out.1"
    valgrinds.write_text("events: Ir\nfl=a.c\nfn=f\n1 100\n")
    done = gate(tmp_path, "--baseline", str(valgrinds), "--", "true")
    assert done.returncode == 2 and f"perfsleuth import {valgrinds}" in done.stderr


def test_a_stored_run_is_judged_without_recording_it_again(
    baseline: Path, examples_built: Path, tmp_path: Path
) -> None:
    keys = str(examples_built / "keys")
    subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(tmp_path)]
        + ["--mode", "count", "--", keys, "1010000"],
        check=True,
        capture_output=True,
    )
    done = gate(tmp_path, "--baseline", str(baseline), "--run", "latest", "--format", "json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["run"] == "1" and doc["change"] > 0.005
    assert (
        len(
            json.loads(
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "perfsleuth.cli",
                        "runs",
                        "--store",
                        str(tmp_path),
                        "--format",
                        "json",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
        )
        == 1
    )
    both = gate(tmp_path, "--baseline", str(baseline), "--run", "1", "--", keys)
    assert both.returncode == 2 and "not both" in both.stderr
