"""Bounds in CPU time: a hung command is stopped, a busy one is not, and a worker's
own CPU time raises when used up."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.static_analysis import cpu_limits

BURN = "import time\nt = time.process_time()\nwhile time.process_time() < t + 0.8: pass\nprint(1)"
BUSY = [sys.executable, "-c", BURN]


def test_a_command_that_uses_no_cpu_is_stopped_as_hung(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cpu_limits, "HANG_S", 1)
    monkeypatch.setattr(cpu_limits, "POLL_S", 0.2)
    with pytest.raises(cpu_limits.Hung):
        cpu_limits.run_unless_hung(["sleep", "60"], tmp_path)


def test_a_command_that_keeps_using_cpu_runs_to_its_end(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cpu_limits, "HANG_S", 1)
    monkeypatch.setattr(cpu_limits, "POLL_S", 0.2)
    done = cpu_limits.run_unless_hung(BUSY, tmp_path)
    assert done.returncode == 0
    assert done.stdout == "1\n"


def test_cpu_time_of_a_process_counts_its_children() -> None:
    """The shell only waits: the CPU time seen is its child's."""
    script = " ".join(shlex.quote(arg) for arg in BUSY) + " > /dev/null & wait"
    seen = 0.0
    with subprocess.Popen(["sh", "-c", script]) as shell:
        while shell.poll() is None:
            seen = max(seen, cpu_limits.tree_cpu_seconds(shell.pid))
    assert seen >= 0.3


def test_a_worker_over_its_cpu_time_gets_an_exception() -> None:
    with pytest.raises(cpu_limits.OverCpuTime), cpu_limits.cpu_limit(1):
        while True:
            pass
