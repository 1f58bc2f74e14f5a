"""--mode offcpu samples stacks, but keeps every block's time: a process that
blocks once, for a second, is there in full, with its stack and state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.collect import offcpu
from perfsleuth.store.runs import Store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="eBPF needs root"),
]

VENV_BIN = Path(sys.executable).parent
SLEEP_S = 1.0


def perfsleuth(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = [str(VENV_BIN / "perfsleuth"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_single_long_sleep_keeps_its_time_its_state_and_the_sampling_is_stated(
    tmp_path: Path,
):
    # the shell forks `sleep`, a child process the recording follows
    command = ["sh", "-c", f"sleep {SLEEP_S}; echo done"]
    proc = perfsleuth("record", "--mode", "offcpu", "--", *command, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)
    sleeper = next(t for t in threads["threads"] if t["name"] == "sleep")
    assert sleeper["total"] >= 0.9 * SLEEP_S * 1e9
    assert sleeper["states"].get("sleep", 0) > 0.9
    store = Store(tmp_path / ".perfsleuth")
    sampling = store.load(store.resolve("latest")).meta["offcpu_stack_sampling"]
    assert sampling["every"] == offcpu.SAMPLE_EVERY
    assert 0 < sampling["sampled_share"] <= 1
