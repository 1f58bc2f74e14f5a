"""I/O waits and sleep/poll loops on threads that also do real work (kind off-cpu).

Waiting samples in the io and sleep states are grouped by call site (wait_sites.py);
I/O waits inside poll(), select() or epoll_wait() count as a sleep/poll loop. Only
threads that also run count: an acceptor blocked in accept() all its life is idle,
not slow. A process's main thread counts too: a program that mostly waits for its I/O
is slow by its waits, whatever its CPU share; unless other processes of the run work
meanwhile, whose output it waits for (a parent reading its child through a pipe).
Waits in calls of a blocking cost class (fsync: rules/cost_classes.toml) are left to
cost_classes.py, whose finding has the fix for their cause.

A wait for events (poll, epoll_wait...) is a poll loop only when it times out soon: a
blocking one has the same stacks. Where the run saw the timeouts the threads passed
(wall mode's wait_timeouts), a site all of whose waits are such calls, and whose
threads' waits mostly passed no timeout or a long one, is a blocking wait: no finding.

estimated_gain is the part of the waiting threads' wall time a fix is expected to
give back.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..collect import thread_state
from ..model.findings import Finding
from ..model.profile import Profile
from ..rules import load_classes
from . import Context
from .wait_sites import ThreadTime, Wait, thread_totals, threads_text, waits, where

# A thread "works" when it runs at least this much of its time, and the finding
# needs this much of its time waiting.
MIN_RUNNING = {"io": 0.02, "sleep": 0.05}
MIN_FRACTION = {"io": 0.1, "sleep": 0.05}
# A wait for events with a timeout up to this (ms) polls; the finding needs this
# much of its threads' waits seen with one, where the run saw their timeouts.
POLL_TIMEOUT_MS = 50
MIN_POLLING = 0.1
# A main thread's I/O waits are another process's work when the run's other processes
# run this part of the waiting time or more (a parent reading its child through a pipe)
OTHERS_WORK = 0.5


@dataclass(frozen=True)
class _Kind:
    rule: str
    # What removing the wait would save, as a fraction of it.
    gain: float
    title: str  # with {percent} and {where}
    suggestion: str


KINDS = {
    # I/O can often overlap with work.
    "io": _Kind(
        "offcpu.io-wait",
        0.25,
        "{percent:.1f}% of a working thread's time is spent waiting for I/O in {where}",
        "Take the I/O off the hot thread (a dedicated I/O thread or asynchronous I/O "
        "such as io_uring), read and write in larger blocks, and buffer or cache what "
        "is read repeatedly",
    ),
    # A sleep/poll loop mostly adds latency, and its thread may not be on the
    # critical path at all.
    "sleep": _Kind(
        "offcpu.sleep-poll",
        0.1,
        "a working thread sleeps or polls {percent:.1f}% of its time: {where}",
        "Replace the sleep/poll loop with a blocking wait that wakes exactly when there "
        "is work (a condition variable, a semaphore, an eventfd, or a blocking queue "
        "pop), or shorten the timeout the loop sleeps for",
    ),
}
# A yield whose stack stops in libc (a frame-pointer walk through a program built
# without them): a Rust program's parking_lot and crossbeam spin with sched_yield
# before they park, so the wait may be a lock's or a channel's, not a poll loop
CUT_YIELD = _Kind(
    "offcpu.sleep-poll",
    0.1,
    "a working thread yields the CPU {percent:.1f}% of its time, in a call this run "
    "cannot see: {where}",
    "The stacks stop in libc's sched_yield, so whether this is a yield loop of the program "
    "or a lock's or a channel's spinning (parking_lot, crossbeam yield before they park) "
    "cannot be told: record with --mode wall or --mode all, or build with frame pointers "
    "(-fno-omit-frame-pointer; Rust: -C force-frame-pointers=yes)",
)


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    found = list(waits(profile, tuple(KINDS)))
    if not found:
        return []
    thread_time = thread_totals(profile)
    blocking = [cls for cls in load_classes() if cls.blocking]
    findings = [
        _finding(profile, wait, thread_time)
        for wait in found
        if _working(profile, wait, thread_time)
        and wait.fraction >= MIN_FRACTION[wait.group]
        and not any(cls.matches(_main_wait(wait), "") for cls in blocking)
        and not _blocks_for_events(profile, wait)
    ]
    return sorted(findings, key=lambda f: -f.estimated_gain)


def _working(profile: Profile, wait: Wait, thread_time: ThreadTime) -> bool:
    least = MIN_RUNNING[wait.group]
    return any(
        thread_time.running[t] >= least * thread_time.total[t]
        or (wait.group == "io" and _main_waiting_on_its_own(profile, t, wait, thread_time))
        for t in wait.site.by_thread
    )


def _main_waiting_on_its_own(profile: Profile, t: int, wait: Wait, thread_time: ThreadTime) -> bool:
    """A process's main thread whose I/O waits no other process of the run works through:
    `git repack` reads its child pack-objects' output through a pipe for 99.7% of its
    time while the child's threads run, and was told to take its I/O off the hot thread
    (gain 24.9%). Other processes running OTHERS_WORK of its wait here: it waits for them."""
    if t < 0 or profile.threads[t].tid != profile.threads[t].pid:
        return False
    pid = profile.threads[t].pid
    others = sum(
        ns
        for other, ns in thread_time.running.items()
        if other >= 0 and profile.threads[other].pid != pid
    )
    return others < OTHERS_WORK * wait.site.by_thread[t]


def _blocks_for_events(profile: Profile, wait: Wait) -> bool:
    """A site waiting only in calls for events (no sleep), whose threads passed those
    calls no timeout or a long one in most of the time the run saw them there."""
    if wait.group != "sleep" or wait.site.by_state.get("sleep", 0.0) > 0:
        return False
    tids = {profile.threads[t].tid for t in wait.site.by_thread if t >= 0}
    seen = [(ms, ns) for tid, ms, ns in profile.meta.get("wait_timeouts", []) if tid in tids]
    polling = sum(ns for ms, ns in seen if 0 <= ms <= POLL_TIMEOUT_MS)
    total = sum(ns for _ms, ns in seen)
    return total > 0 and polling < MIN_POLLING * total


def _main_wait(wait: Wait) -> str:
    functions = wait.site.wait_functions
    return max(functions, key=functions.__getitem__) if functions else ""


def _finding(profile: Profile, wait: Wait, thread_time: ThreadTime) -> Finding:
    kind, site = KINDS[wait.group], wait.site
    if site.inferred and all(name in thread_state.YIELDS for name in site.wait_functions):
        kind = CUT_YIELD
    waiting_in = sorted(site.wait_functions, key=lambda name: -site.wait_functions[name])
    return Finding(
        rule=kind.rule,
        kind="off-cpu",
        title=kind.title.format(percent=100 * wait.fraction, where=where(site)),
        function=site.frame.function,
        dso=site.frame.dso,
        file=site.frame.file,
        line=site.frame.line,
        share=wait.share,
        estimated_gain=wait.fraction * kind.gain,
        confidence=0.4,
        evidence=[
            f"threads: {threads_text(profile, site, thread_time)} of their wall time",
            f"waiting in: {', '.join(waiting_in)}",
        ],
        suggestion=kind.suggestion,
    )
