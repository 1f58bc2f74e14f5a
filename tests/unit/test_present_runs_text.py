import io
import json
from pathlib import Path

import pytest

from perfsleuth.present.text import OUTPUT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_command_is_shown_as_it_was_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfsleuth runs --format json` of two count runs of xmllint 2.9.14 with an XPath
    argument: the text table took its predicates for rich markup and left them out
    (`count(//*//field)` for `count(//*[local-name()='record'][@a1 > 50000]//field)`)."""
    monkeypatch.setenv("COLUMNS", "400")  # no command folded
    runs = json.loads((FIXTURES / "runs" / "xmllint.json").read_text())
    out = io.StringIO()
    OUTPUT.writers["runs"](runs, out)
    lines = out.getvalue().splitlines()
    for run, line in zip(runs, lines[1:], strict=True):
        assert line.rstrip().endswith(run["command"])
