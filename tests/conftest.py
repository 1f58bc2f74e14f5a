"""Shared test fixtures: a scratch store and the built example programs."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXAMPLE_BIN = EXAMPLES / "bin"

# A login shell on Debian names its public debuginfod server: fleet queries in tests
# ask only the servers the tests start (tests/integration/test_fleet_debuginfod.py).
os.environ.pop("DEBUGINFOD_URLS", None)

# Started in the background by a non-interactive shell (`make test &`, nohup), the tests
# inherit SIGINT ignored, and so do the programs they start: a stand-in asked to stop with
# SIGINT never ended (killed after 120 s), and a target that should end on Ctrl-C would
# not. The tests run as from a terminal, whatever started them.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(scope="session")
def examples_built() -> Path:
    """Builds examples/ once per session (make is incremental)."""
    subprocess.run(["make", "-s", "-C", str(EXAMPLES)], check=True)
    return EXAMPLE_BIN


@pytest.fixture(scope="session")
def asm_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """asm_binary.py's small program, built once for the machine-code tests."""
    from asm_binary import build

    return build(tmp_path_factory.mktemp("asm"))
