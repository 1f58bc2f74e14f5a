"""A real Go program nobody here wrote: gofmt, from the Go toolchain the setup finds or
fetches (scripts/go-toolchain.sh), listing the unformatted files of the toolchain's own
net/http sources. Its garbage collector is a finding whose fix is an environment
variable, and `advise --verify` times it (`--all`: under load the timing can find no difference,
and such a finding is hidden by default)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

VENV_GO = Path(__file__).resolve().parents[2] / ".venv" / "go"


def _gofmt() -> Path:
    found = shutil.which("gofmt")
    for candidate in (found, "/usr/local/go/bin/gofmt", VENV_GO / "bin" / "gofmt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("no Go toolchain: make setup fetches one (scripts/go-toolchain.sh)")


def test_gofmts_garbage_collection_is_told_to_raise_gogc_and_timed(tmp_path: Path) -> None:
    gofmt = _gofmt()
    sources = gofmt.parents[1] / "src" / "net" / "http"
    out = tmp_path / "findings.json"
    command = ["run", "--verify", "--all", "--format", "json", "-o", str(out), "--"]
    perfsleuth(tmp_path / "store", *command, str(gofmt), "-l", str(sources))
    findings = json.loads(out.read_text())["findings"]
    gc = next(f for f in findings if f["rule"] == "runtime.go-gc")
    assert gc["kind"] == "runtime-tuning" and gc["share"] >= 0.03
    assert gc["fix"]["env"] == {"GOGC": "400"}
    assert gc["fix"]["command"].startswith(f"GOGC=400 {gofmt} -l")
    # what was run, not how fast: timings belong in bench/
    verified = gc["verified"]
    assert verified["variant"] == "GOGC=400"
    assert verified["candidate"]["env"] == {"GOGC": "400"} and "env" not in verified["baseline"]
    assert verified["candidate"]["failed"] == verified["baseline"]["failed"] == 0
