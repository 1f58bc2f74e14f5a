"""A real program nobody here wrote: GNU sort, in a UTF-8 locale, of lines with accented
letters. Its comparisons go through the locale's collation (strcoll), which the C locale
replaces with a byte comparison: a finding whose fix is LC_ALL=C, timed by `advise
--verify` (`--all`: under load the timing can find no difference, and such a finding is
hidden by default). C.UTF-8 is glibc's own locale, on every Debian machine; in it strcoll
jumps to strcmp, so the finding holds a small share (4-5%) of what LC_ALL=C saves there
(49% measured by hand): the verifier's measurement is the one to read."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

LINES = 1_500_000
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéüßåø "


def _lines(path: Path) -> Path:
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as out:
        for _ in range(LINES):
            out.write("".join(rng.choices(LETTERS, k=rng.randint(5, 30))) + "\n")
    return path


def test_sorts_collation_is_told_to_use_the_c_locale_and_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    lines = _lines(tmp_path / "lines.txt")
    out = tmp_path / "findings.json"
    command = ["run", "--verify", "--all", "--format", "json", "-o", str(out), "--"]
    perfsleuth(tmp_path / "store", *command, "sort", "-o", str(tmp_path / "sorted"), str(lines))
    findings = json.loads(out.read_text())["findings"]
    collation = next(f for f in findings if f["rule"] == "locale.collation")
    assert collation["kind"] == "runtime-tuning" and collation["share"] >= 0.02
    assert collation["fix"]["env"] == {"LC_ALL": "C"}
    assert collation["fix"]["command"].startswith("LC_ALL=C sort -o")
    # what was run, not how fast: timings belong in bench/
    verified = collation["verified"]
    assert verified["variant"] == "LC_ALL=C"
    assert verified["candidate"]["env"] == {"LC_ALL": "C"} and "env" not in verified["baseline"]
    assert verified["candidate"]["failed"] == verified["baseline"]["failed"] == 0
