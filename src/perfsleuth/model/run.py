"""What is known about a run besides its samples: the run facts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunInfo:
    """What is known about a run besides its samples."""

    command: str = ""
    cwd: str = ""
    mode: str = "cpu"
    started: float = field(default_factory=time.time)
    duration_s: float | None = None
    exit_status: int | None = None
    host: str = ""
    cpu_model: str = ""
    kernel: str = ""
    git_rev: str = ""
    source: str = "record"
    dsos: list[dict] = field(default_factory=list)  # {"path", "build_id"}
    meta: dict = field(default_factory=dict)
    # (kind, name, data) written with the run, in the same transaction
    documents: list[tuple[str, str, Any]] = field(default_factory=list)
    id: int = 0
    unit: str = ""
    total: float = 0.0
    samples: int = 0

    def summary(self) -> dict[str, Any]:
        """The `perfsleuth runs --format json` shape."""
        return {
            "id": str(self.id),
            "command": self.command,
            "mode": self.mode,
            "started": _iso(self.started),
            "duration_s": self.duration_s,
            "exit_status": self.exit_status,
        }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
