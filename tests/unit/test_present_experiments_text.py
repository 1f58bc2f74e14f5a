import io
import json
from pathlib import Path

import pytest

from perfsleuth.present.text import OUTPUT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_compared_commands_are_shown_as_they_were_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfsleuth compare --format json` of two xmllint 2.9.14 builds with an XPath
    argument: the text took its predicates for rich markup and left them out (`A:
    ./xmllint --xpath 'count(//*)' data.xml`)."""
    monkeypatch.setenv("COLUMNS", "400")  # no command wrapped
    doc = json.loads((FIXTURES / "experiments" / "xmllint_compare.json").read_text())
    out = io.StringIO()
    OUTPUT.writers["compare"](doc, out)
    lines = out.getvalue().splitlines()
    assert lines[:2] == [f"A: {doc['a']['command']}", f"B: {doc['b']['command']}"]
