"""Shared test fixtures: a scratch store and the built example programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXAMPLE_BIN = EXAMPLES / "bin"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(scope="session")
def examples_built() -> Path:
    """Builds examples/ once per session (make is incremental)."""
    subprocess.run(["make", "-s", "-C", str(EXAMPLES)], check=True)
    return EXAMPLE_BIN
