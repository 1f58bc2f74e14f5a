"""--mode all's time on the CPU per thread: perf's samples scaled to the scheduler's
count of it.

perf's cpu-clock samples a thread once per period (1 ms at 999 Hz) of its own time on
the CPU, counted from the thread's start: a thread that ran less than a period has no
sample, one that ran 1.9 periods has one. Over a long life that is noise; for threads
living about a millisecond (a thread per task, std::async) it is most of their time
on the CPU, missing from their total, so the share of it they waited read high
(futpool: 563 of 900 workers without a sample, +8 to +11 points over the program's
clock). bpftrace times every run of the target's threads (offcpu.RUN_TIMES): each
thread's samples are scaled to that total, and a thread without a sample gets the
on-CPU stacks of the threads of its kind (those that wait where it waits), in
proportion to their samples, or NOT_SAMPLED where there are none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..model.profile import Frame, Profile, Thread

NOT_SAMPLED = Frame("[on the CPU, not sampled]")

Ran = dict[tuple[int, int], int]  # (tgid, tid): ns on the CPU
Stacks = dict[tuple[Frame, ...], float]  # stack (leaf first): sampled ns


def sampled_ns(oncpu: Profile) -> dict[int, float]:
    """tid -> perf's sampled time on the CPU."""
    out: dict[int, float] = {}
    for _stack, weight, _count, t, _state in oncpu.rows():
        if t >= 0:
            tid = oncpu.threads[t].tid
            out[tid] = out.get(tid, 0.0) + weight
    return out


def scales(sampled: dict[int, float], ran: Ran) -> dict[int, float]:
    """tid -> the factor that makes its samples' time its time on the CPU."""
    return {tid: ns / sampled[tid] for (_tgid, tid), ns in ran.items() if sampled.get(tid)}


def unsampled(
    sampled: dict[int, float],
    ran: Ran,
    threads: dict[int, Thread],
    stacks_of: Callable[[int], Stacks],
) -> Iterator[tuple[list[Frame], float, Thread]]:
    """(stack, ns, thread) for the time on the CPU of the threads perf never sampled:
    spread over the stacks stacks_of(tid) gives, else on NOT_SAMPLED."""
    for (tgid, tid), ns in sorted(ran.items()):
        if sampled.get(tid) or ns <= 0:
            continue
        thread = threads.get(tid) or Thread(tid, tgid)
        stacks = stacks_of(tid) or {(NOT_SAMPLED,): 1.0}
        total = sum(stacks.values())
        for stack, weight in stacks.items():
            yield list(stack), ns * weight / total, thread
