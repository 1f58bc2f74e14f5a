"""Runs the perfsleuth CLI in a subprocess against a store, for integration tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def perfsleuth(store: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`perfsleuth COMMAND --store STORE ARGS...`; asserts success unless check=False."""
    command, *rest = args
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", command, "--store", str(store), *rest],
        capture_output=True,
        text=True,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done
