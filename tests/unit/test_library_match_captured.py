"""Library rules on captured real profiles (tests/fixtures/advisor/*.pb.gz).

Each fixture is a real perf recording of the program of the same name in
examples/advisor/, captured with
    perfsleuth record -- examples/bin/NAME      (python3 examples/advisor/json_roundtrip.py)
    perfsleuth export --pprof tests/fixtures/advisor/NAME.pb.gz
The planted problem's rule must be the library finding with the largest gain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, library_match
from perfsleuth.formats import pprof
from perfsleuth.model.run import RunInfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "advisor"
PLANTED = {
    "iostream_format": "formatting.iostream",
    "mutex_counter": "locking.mutex-on-cpu",
    "unordered_index": "container.node-map",
    "strtod_parse": "parsing.strtod",
    "icu_upper": "unicode.icu-case",
    "json_roundtrip": "python.json",  # Python json: its own rule (with an orjson proof)
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_rule_has_the_largest_gain(name: str) -> None:
    profile = pprof.read(FIXTURES / f"{name}.pb.gz")
    findings = library_match.analyze(Context(profile=profile, run=RunInfo(command=name)))
    best = max(findings, key=lambda f: f.estimated_gain)
    assert best.rule == PLANTED[name]
    assert 0 < best.estimated_gain <= best.share
