"""What the recorders are told: typed options, filled by `commands/` from the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.progress import SILENT, Progress

MAX_CALLS = 200  # cache mode: calls whose accesses are kept
SAMPLE_AUTO = 0  # cache mode: 1 in k calls traced, k chosen as the run goes on
TRACE_SECONDS = 300.0  # cache mode: a sampled run is stopped after this long
# bounds of the options above: every call kept is held in memory; fntrace's records
# carry k in 32 bits
MAX_TRACED_CALLS = 100_000
MAX_SAMPLE_INTERVAL = 1_000_000_000
MAX_TRACE_SECONDS = 86_400


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
    sample_calls: int = SAMPLE_AUTO  # 1: the first max_calls calls; k: 1 in k calls
    trace_seconds: float = TRACE_SECONDS
    scale: str | None = None
    variants: str | None = None
    cache_model: str | None = None
    progress: Progress = field(default=SILENT, compare=False)  # long modes report to it
