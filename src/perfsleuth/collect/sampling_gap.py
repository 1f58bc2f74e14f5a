"""How much of a recorded command's CPU time its samples account for.

perf's cpu-clock timer is per task: each new process starts a fresh period, and one
that exits before the period runs out is never sampled. A program that spawns a
process per item (a shell loop, `xargs -n 1`, a build) loses every short child: at
999 Hz (a 1 ms period, the `--call-graph dwarf` default) 1,000 children of 0.6 ms of
CPU each gave 17 samples where 4,000 Hz gave 2,365. The kernel's own account of the
command's CPU time (getrusage of the children we waited for) shows the gap.
perf.py samples a launched command per CPU in a cgroup of its own where it may
(command_cgroup.py), which keeps them; this check catches the runs sampled per task.
"""

from __future__ import annotations

import resource

from ..model.profile import Profile

NS = 1e9
COVERED = 0.7  # samples for less than this part of the CPU time: say so
MIN_CPU_S = 0.2  # below this, the sampling's own noise is as large as a gap
FREQ_STEP, MAX_SUGGESTED_FREQ = 4, 20000  # perf's default cap is 100,000 Hz
META_KEY = "cpu_s"  # the command's CPU time (user + system, its children's too)
PER_TASK_REASON = "sampled_reason"  # why a launched command was sampled per task
MIN_PERIODS = 10  # no sample of this many periods of CPU time is the gap, not a short run
PER_CPU_NEEDS = (
    "per CPU, in a cgroup of its own, it would keep them: that needs per-CPU perf events "
    "(root, CAP_PERFMON or kernel.perf_event_paranoid <= 0) and a cgroup folder perfsleuth "
    "may write"
)


def children_cpu_s() -> float:
    """CPU seconds of the children this process has waited for, so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def sampled_cpu_s(profile: Profile, freq: int) -> float:
    """The CPU time the samples stand for: their weights in ns, else one period each."""
    if profile.unit == "ns":
        return profile.total / NS
    return profile.num_samples / freq if freq else 0.0


def gap_warning(profile: Profile, meta: dict) -> str:
    """A sentence when the samples miss much of the command's CPU time, else ""."""
    cpu_s, freq = _measured(meta)
    if cpu_s < MIN_CPU_S or not freq:
        return ""
    sampled = sampled_cpu_s(profile, freq)
    if sampled >= COVERED * cpu_s:
        return ""
    return (
        f"the samples account for {sampled:.2f} s of the {cpu_s:.2f} s of CPU time the command "
        f"and its children used: {_why_and_what_to_do(freq, meta)}"
    )


def empty_warning(meta: dict) -> str:
    """Why a recording that kept no sample is empty when the command used the CPU for
    many sampling periods (the gap, not a command that ran too briefly), else ""."""
    cpu_s, freq = _measured(meta)
    if not freq or cpu_s * freq < MIN_PERIODS:
        return ""
    return (
        f"perf kept no sample of the {cpu_s:.2f} s of CPU time the command and its children "
        f"used: {_why_and_what_to_do(freq, meta)}"
    )


def _measured(meta: dict) -> tuple[float, int]:
    cpu_s = meta.get(META_KEY)
    return (cpu_s if isinstance(cpu_s, int | float) else 0.0), int(meta.get("freq") or 0)


def _why_and_what_to_do(freq: int, meta: dict) -> str:
    faster = min(FREQ_STEP * freq, MAX_SUGGESTED_FREQ)
    again = (
        f"record again with --freq {faster} (a period of {1000 / faster:.2f} ms)"
        if faster > freq
        else "count them instead (--mode count)"
    )
    reason = meta.get(PER_TASK_REASON)
    why = f" (sampled per task: {reason}; {PER_CPU_NEEDS})" if reason else ""
    return (
        f"each process starts a fresh sampling period ({1000 / freq:.2f} ms at {freq} Hz) and "
        f"loses the part it does not finish, so short-lived processes are missing from the "
        f"profile{why}; {again}, or record a workload that does the same work in fewer, "
        f"longer-running processes"
    )
