"""What the recorders are told: typed options, filled by `commands/` from the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.progress import SILENT, Progress

MAX_CALLS = 200  # cache mode: calls whose accesses are kept


@dataclass(frozen=True)
class RecordOptions:
    mode: str = "cpu"
    freq: int | None = None  # Hz; None: the mode's default
    call_graph: str = "auto"  # auto | fp | dwarf
    pid: int | None = None  # attach to a running process instead of starting CMD
    duration: float | None = None  # seconds to record with pid
    fallback_wall: bool = False  # offcpu: wall-clock snapshots when eBPF is unavailable
    # count mode (valgrind)
    cache_sim: bool = False
    only: str | None = None
    keep_env: bool = False
    # cache mode (memory traces)
    function: str | None = None
    max_calls: int = MAX_CALLS
    scale: str | None = None
    variants: str | None = None
    cache_model: str | None = None
    progress: Progress = field(default=SILENT, compare=False)  # long modes report to it
