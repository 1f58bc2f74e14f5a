"""The agent's own cost: CPU of the agent and of its perf, their memory.

CPU comes from /proc/PID/stat (utime + stime) for both processes, so perf's
share is known while it runs (a child's rusage only arrives once it is reaped);
the symbolizer tools the agent runs are added as they are reaped.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | str) -> float:
    """User + system CPU time of a process so far; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # after "pid (comm)": state is field 3, utime 14 and stime 15
    return (int(fields[11]) + int(fields[12])) / TICK


def own_cpu() -> float:
    """CPU time of this process and of the children it reaped (its symbolizer tools)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def rss_bytes(pid: int | str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class Usage:
    agent_cpu_s: float
    perf_cpu_s: float
    cpu_share: float  # of the whole host (all CPUs), since the previous reading
    cpu_share_since_start: float  # the same since the meter started: what the agent costs
    agent_rss_bytes: int
    perf_rss_bytes: int


class Meter:
    def __init__(self, ncpus: int | None = None) -> None:
        self.ncpus = ncpus or os.cpu_count() or 1
        self.perf_cpu_s = 0.0
        self._last = self._start = (time.monotonic(), own_cpu(), 0.0)

    def read(self, perf_pid: int | None) -> Usage:
        now, agent = time.monotonic(), own_cpu()
        if perf_pid is not None:
            # keep the last value seen: perf's counter vanishes when it exits
            self.perf_cpu_s = max(self.perf_cpu_s, cpu_seconds(perf_pid))
        share = self._share(self._last, now, agent)
        self._last = (now, agent, self.perf_cpu_s)
        return Usage(
            agent_cpu_s=agent,
            perf_cpu_s=self.perf_cpu_s,
            cpu_share=share,
            cpu_share_since_start=self._share(self._start, now, agent),
            agent_rss_bytes=rss_bytes("self"),
            perf_rss_bytes=rss_bytes(perf_pid) if perf_pid is not None else 0,
        )

    def spent(self, perf_pid: int | None) -> tuple[float, float]:
        """(seconds since the meter started, CPU seconds the agent and perf used since),
        without moving the reading `read` compares with."""
        if perf_pid is not None:
            self.perf_cpu_s = max(self.perf_cpu_s, cpu_seconds(perf_pid))
        then, agent_then, perf_then = self._start
        used = own_cpu() - agent_then + self.perf_cpu_s - perf_then
        return time.monotonic() - then, used

    def _share(self, since: tuple[float, float, float], now: float, agent: float) -> float:
        """The agent's and perf's CPU from the reading `since` to now, as a share of the host."""
        then, agent_then, perf_then = since
        used = agent - agent_then + self.perf_cpu_s - perf_then
        return used / max(now - then, 1e-6) / self.ncpus


# What the agent gives up as it nears its CPU cap, least valuable first (docs/fleet.md):
FULL = 0  # every window converted, new addresses named as the budget allows (below),
# Python frames of the busiest processes once naming has caught up
PYTHON_ASKED = 1  # py-spy only on the processes --python-match names
SYMBOLS_CACHED = 2  # + new addresses shipped unnamed (build-id + address), named later,
# but the few most sampled (daemon.MIN_NAMED a window) while within the cap
THIN = 3  # + windows left out unconverted: the last resort
LEVELS = ("full", "python-asked-only", "symbols-cached-only", "thin")
# Shares of the allowance at which the first two steps are taken.
PYTHON_ASKED_AT = 0.5
SYMBOLS_CACHED_AT = 0.75


@dataclass(frozen=True)
class Budget:
    """A CPU cap: `share` of the host's `ncpus` CPUs over the agent's life, plus an
    allowance of one window's worth, so a window's conversion may run at once."""

    share: float
    ncpus: int
    window_s: float

    def host_share(self, elapsed_s: float, used_s: float) -> float:
        """CPU seconds used over elapsed seconds, as a share of the host's CPUs."""
        return used_s / max(elapsed_s, 1e-6) / self.ncpus

    def used_of_allowed(self, elapsed_s: float, used_s: float) -> float:
        return used_s / (self.share * self.ncpus * (elapsed_s + self.window_s))

    def naming_allowance_s(self, elapsed_s: float, used_s: float) -> float:
        """CPU seconds naming new addresses may spend now: up to SYMBOLS_CACHED_AT of the
        cap over the time so far, without the window's allowance, so that naming a busy
        host's programs is spread over windows instead of pushing the agent's share since
        its start over the cap (the window's allowance went to the first window's naming,
        0.4 CPU-s on a loaded 2-CPU host: since start 1.3% after 45 s)."""
        allowed = self.share * self.ncpus * elapsed_s
        return max(0.0, SYMBOLS_CACHED_AT * allowed - used_s)

    def level(self, elapsed_s: float, used_s: float, recent_share: float) -> int:
        """How much to give up for the next window. Over the cap, a window is still
        converted (cheaply) while the agent's share since the last window, the cheap
        conversions' cost, is within the cap: that pays the excess back without
        losing windows. Only when even that is over the cap is the window left out."""
        used = self.used_of_allowed(elapsed_s, used_s)
        if used < PYTHON_ASKED_AT:
            return FULL
        if used < SYMBOLS_CACHED_AT:
            return PYTHON_ASKED
        if used <= 1 or recent_share <= self.share:
            return SYMBOLS_CACHED
        return THIN
