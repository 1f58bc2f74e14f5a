"""Whether this process may sample every CPU: root, CAP_PERFMON or
kernel.perf_event_paranoid, read from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
# Bits of /proc/self/status CapEff that allow system-wide perf events.
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_IPC_LOCK = 14


@dataclass(frozen=True)
class Access:
    """What decides whether this process may sample the whole host."""

    euid: int
    cap_eff: int
    paranoid: int | None  # None: the sysctl is unreadable (no perf events in this kernel)


def current_access(paranoid: Path = PARANOID) -> Access:
    cap_eff = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                cap_eff = int(line.split()[1], 16)
    except OSError:
        pass
    try:
        level: int | None = int(paranoid.read_text().strip())
    except (OSError, ValueError):
        level = None
    return Access(os.geteuid(), cap_eff, level)


def may_sample_cpus(access: Access) -> bool:
    """Whether perf may open events on every CPU (perf record -a)."""
    if access.paranoid is None:
        return False
    privileged = access.euid == 0 or access.cap_eff & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN)
    return bool(privileged) or access.paranoid <= 0  # 0 allows CPU-wide events to anyone


def may_lock_memory(access: Access) -> bool:
    """Whether perf may map buffers beyond kernel.perf_event_mlock_kb (CAP_IPC_LOCK)."""
    return access.euid == 0 or bool(access.cap_eff & (1 << CAP_IPC_LOCK))


def check_access(access: Access) -> None:
    """Raise a one-line UserError saying what is missing to sample every CPU."""
    if access.paranoid is None:
        raise UserError(
            f"{PARANOID} is missing: this kernel has no perf events "
            "(CONFIG_PERF_EVENTS); run the agent on a kernel built with them"
        )
    if may_sample_cpus(access):
        return
    raise UserError(
        f"sampling every process needs root or CAP_PERFMON, and this agent runs as uid "
        f"{access.euid} without it (kernel.perf_event_paranoid={access.paranoid}): run it as "
        "root, grant CAP_PERFMON (e.g. systemd AmbientCapabilities=CAP_PERFMON CAP_SYS_PTRACE), "
        "or lower the limit: `sysctl kernel.perf_event_paranoid=0`"
    )
