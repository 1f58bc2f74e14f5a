"""The agent's settings and their defaults, apart from the loop that runs them:
`perfsleuth agent --help` shows the defaults without importing perf's reader, the
pprof encoder and the symbolizers (0.35 CPU-s; issue 29: any command under 0.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# The default CPU cap: 1% of the host, the agent's perf included (commands/agent.py).
DEFAULT_MAX_CPU_SHARE = 0.01
# CPython processes sampled with py-spy at once, the busiest first (python_sampler.py).
DEFAULT_PYTHON_PROCESSES = 3


@dataclass(frozen=True)
class AgentConfig:
    server: str
    spool: Path
    token: str | None = None
    freq: int = 19
    window_s: int = 20
    max_spool_bytes: int = 256 << 20
    call_graph: str = "dwarf"
    labels: dict[str, str] = field(default_factory=dict)
    python_processes: int = DEFAULT_PYTHON_PROCESSES  # sampled with py-spy at once; 0: none
    python_match: str = ""  # a regex their command lines must match; "": any
    # of the host, agent and perf together; None: no cap
    max_cpu_share: float | None = DEFAULT_MAX_CPU_SHARE
