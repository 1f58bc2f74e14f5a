"""The single-file report of an imported run reads no file it was not asked to (issue 19,
item 8): here, not in tests/unit, because the report is the built web UI's page."""

from __future__ import annotations

from pathlib import Path

import pytest
from secret_import import SECRET, import_secret_run

from perfsleuth.cli import main

pytestmark = pytest.mark.integration


def test_report_of_an_imported_run_reads_nothing_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(home)
    import_secret_run(home)
    assert main(["report", "--store", "store", "-o", "report.html"]) == 0
    page = (home / "report.html").read_text()
    assert "<html" in page.lower() and SECRET not in page
