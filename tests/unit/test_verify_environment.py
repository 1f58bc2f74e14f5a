"""`advise --verify` of a fix made of environment variables: the recorded command with
and without them, in the recorded run's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers import Context
from perfsleuth.errors import UserError
from perfsleuth.experiments.verify import Trial, _environment_sides
from perfsleuth.model.findings import Finding
from perfsleuth.model.profile import ProfileBuilder
from perfsleuth.model.run import RunInfo


def finding(fix: dict) -> Finding:
    return Finding(
        rule="runtime.go-gc", kind="runtime-tuning", title="GC", share=0.15,
        estimated_gain=0.13, confidence=0.6, suggestion="GOGC=400", fix=fix,
    )  # fmt: skip


def trial(tmp_path: Path) -> Trial:
    run = RunInfo(command="gofmt -l src", cwd=str(tmp_path))
    return Trial(Context(profile=ProfileBuilder().build(), run=run), ["gofmt", "-l", "src"])


def test_the_candidate_is_the_command_with_the_fixs_environment(tmp_path: Path) -> None:
    base, tuned = _environment_sides(finding({"env": {"GOGC": "400"}}), trial(tmp_path))
    assert (base.argv, base.env, base.cwd) == (["gofmt", "-l", "src"], {}, str(tmp_path))
    assert (tuned.name, tuned.argv, tuned.env) == ("GOGC=400", base.argv, {"GOGC": "400"})
    assert tuned.cwd == str(tmp_path)


def test_a_finding_without_environment_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no environment variables"):
        _environment_sides(finding({}), trial(tmp_path))
