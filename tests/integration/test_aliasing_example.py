"""`perfsleuth run` on examples/aliasing/expand.cc: the aliasing write of its hot loop
is a top-3 finding, with clang's remark and the reload instructions as evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def findings(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    store = tmp_path_factory.mktemp("aliasing") / "store"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfsleuth.cli",
            "run",
            "--store",
            str(store),
            "--format",
            "json",
            "--",
            str(examples_built / "expand"),
            "8000",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout[done.stdout.index("{") :])["findings"]


def test_the_aliasing_write_is_in_the_top_3(findings: list[dict]) -> None:
    top = [f for f in findings[:3] if f["kind"] == "aliasing-write"]
    assert top, [f["title"] for f in findings[:3]]
    finding = top[0]
    assert finding["function"] == "expand"
    assert finding["line"] == 17
    assert "in.size()" in finding["title"]


def test_the_evidence_has_the_remark_and_the_reloads(findings: list[dict]) -> None:
    finding = next(f for f in findings if f["kind"] == "aliasing-write")
    evidence = "\n".join(finding["evidence"])
    assert "clang: loop not vectorized: could not determine number of loop iterations" in evidence
    assert "mov byte ptr [" in evidence
    reloads = [e for e in finding["evidence"] if "qword ptr [" in e and e.startswith("0x")]
    assert len(reloads) >= 3
    assert finding["confidence"] >= 0.9
