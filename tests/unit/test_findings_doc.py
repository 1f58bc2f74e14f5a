"""docs/findings.md names every finding kind of model/findings.KINDS, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from perfsleuth.model.findings import KINDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def test_the_kinds_section_lists_exactly_the_kinds_in_the_code() -> None:
    section = DOC.read_text().split("### Kinds", 1)[1].split("\n## ", 1)[0]
    listed_part = section.split("The list lives", 1)[0]
    listed = re.findall(r"`([a-z-]+)`", listed_part)
    assert sorted(listed) == sorted(KINDS)
    assert len(listed) == len(set(listed))
