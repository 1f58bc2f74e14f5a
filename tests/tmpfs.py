"""A small tmpfs mounted for one test: a real full disk (root only, else the test skips)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(mount: Path, size: str) -> Iterator[Path]:
    """`mount` (created) as a tmpfs of `size` bytes (`64k`, `6m`) while the block runs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, timeout=60)


def fill(disk: Path) -> Path:
    """A file taking every free byte of `disk`; delete it to give the space back."""
    ballast = disk / "ballast"
    with open(ballast, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return ballast
