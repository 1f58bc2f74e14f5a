"""The progress display: drawn on a terminal, silent in pipes and with --quiet."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from recorded_progress import Recorded
from rich.console import Console

from perfsleuth.experiments.runner import Side, measure
from perfsleuth.model.progress import SILENT
from perfsleuth.present.progress import display

FOLDED = Path(__file__).resolve().parents[1] / "fixtures" / "hot.folded"


def _shown(quiet: bool = False, terminal: bool = True, phases: bool = True) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, width=100)
    with display(quiet=quiet, console=console) as progress:
        if phases:
            progress.phase("tracing handle_packet", total=10)
            progress.advance(3)
    return buffer.getvalue()


def test_a_terminal_shows_phase_done_total_and_times() -> None:
    shown = _shown()
    assert "tracing handle_packet" in shown
    assert "3/10" in shown
    assert "0:00:00" in shown and "left" in shown


def test_nothing_is_drawn_when_stderr_is_not_a_terminal() -> None:
    assert _shown(terminal=False) == ""


def test_quiet_draws_nothing_even_on_a_terminal() -> None:
    assert _shown(quiet=True) == ""


def test_work_that_reports_no_phase_leaves_the_terminal_alone() -> None:
    assert _shown(phases=False) == ""


def test_silent_progress_is_what_quiet_yields() -> None:
    with display(quiet=True) as progress:
        assert progress is SILENT


def test_ab_runs_count_every_run_of_every_side() -> None:
    progress = Recorded()
    measure([Side("A", ["true"]), Side("B", ["true"])], 3, 1, "time", progress)
    assert progress.phases == [("running 2 commands: 1 warm-up and 3 measured rounds", 8)]
    assert progress.done == 8


def test_import_in_a_pipe_writes_no_progress(tmp_path: Path) -> None:
    for quiet in ([], ["--quiet"]):
        done = subprocess.run(
            [sys.executable, "-m", "perfsleuth.cli", *quiet, "import", str(FOLDED)]
            + ["--store", str(tmp_path / "store")],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "\x1b" not in done.stderr and "reading" not in done.stderr
        assert done.stderr.startswith("perfsleuth: imported")
