"""Cost classes on real recordings (perf) of planted problems from bench/advisor_set:
a profile no library rule explains still gets its finding, at the user's line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

SET = Path(__file__).resolve().parents[2] / "bench" / "advisor_set"


def _build(name: str, tmp_path: Path) -> Path:
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(SET / f"{name}.c")], check=True)
    return exe


def _findings(exe: Path, tmp_path: Path) -> list[dict]:
    out = tmp_path / "findings.json"
    perfsleuth(tmp_path / "store", "run", "--format", "json", "-o", str(out), "--", str(exe))
    return json.loads(out.read_text())["findings"]


def test_one_write_per_record_is_the_first_finding_at_the_callers_line(tmp_path: Path) -> None:
    findings = _findings(_build("write_per_record", tmp_path), tmp_path)
    first = findings[0]
    assert first["rule"] == "class.syscall.write", [f["title"] for f in findings]
    assert first["function"] == "log_event" and first["file"].endswith("write_per_record.c")
    assert first["share"] >= 0.4 and "buffer" in first["suggestion"].lower()
    assert first["gain_low"] <= first["estimated_gain"] <= first["gain_high"] <= first["share"]


def test_a_program_waiting_in_fsync_is_told_to_sync_per_batch(tmp_path: Path) -> None:
    """On the CPU a few percent of the run: the waits are inferred from the fsync seen."""
    findings = _findings(_build("fsync_per_record", tmp_path), tmp_path)
    sync = next(f for f in findings if f["rule"] == "class.syscall.fsync")
    assert findings.index(sync) == 0, [f["title"] for f in findings]
    assert sync["function"] == "save" and sync["share"] >= 0.5
    assert "once per batch" in sync["suggestion"]


def test_a_pattern_compiled_per_call_is_nearly_the_whole_run(tmp_path: Path) -> None:
    """regcomp per call: the compile, regfree and the DFA states regexec builds for each
    fresh pattern are one cost (the fix, regcomp once, measured ~99% faster)."""
    findings = _findings(_build("regcomp_per_call", tmp_path), tmp_path)
    first = findings[0]
    assert first["rule"] == "class.regex.compile", [f["title"] for f in findings]
    assert first["share"] >= 0.75
    engines = [f for f in findings if f["rule"] == "class.regex.engines"]
    assert all(f["share"] < first["share"] / 2 for f in engines)


def test_sorting_after_every_insert_is_told_to_sort_less(tmp_path: Path) -> None:
    """The qsort rule says how to sort faster (in C, a sort generated for the element
    type: C has no std::sort); the sorting class beside it says sort once, and its
    larger estimate (the planted fix removed the whole share) ranks it first."""
    findings = _findings(_build("sort_every_insert", tmp_path), tmp_path)
    rules = [f["rule"] for f in findings]
    assert rules[0] == "class.sort.sorting" and "sort.qsort" in rules, rules
    assert "sort once" in findings[0]["suggestion"]
    qsort = findings[rules.index("sort.qsort")]
    assert "C has no std::sort" in qsort["suggestion"], qsort["suggestion"]
    assert findings[0]["estimated_gain"] >= qsort["estimated_gain"]


def test_a_process_per_item_is_told_to_batch(tmp_path: Path) -> None:
    """spawn_per_item: 1,000 children of well under 1 ms of CPU each. Sampled per CPU in
    the command's cgroup (per task almost none would be: test_record_per_cpu.py), the
    start-ups are the run at the default rate."""
    findings = _findings(_build("spawn_per_item", tmp_path), tmp_path)
    first = findings[0]
    assert first["rule"] == "class.process.startup", [f["title"] for f in findings]
    assert first["share"] >= 0.6 and "xargs" in first["suggestion"]
