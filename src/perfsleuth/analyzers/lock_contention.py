"""Lock contention: threads blocked on mutexes and condition variables, and what to do.

Waiting samples in the mutex and condvar states are grouped by call site
(wait_sites.py). For each site: the share of the waiting threads' wall time spent
there, the code the same function runs on the CPU meanwhile (the likely critical
section), and the fix: a lock-free queue for producer-consumer hand-offs, shorter
critical sections, sharding, batching.

estimated_gain is the wall time on the critical path: the program ends when its
last working thread does, so without these waits it would end when the longest of
(a working thread's wall time minus its waits here) does. A consumer that waits
while the producer runs the whole time is not on the critical path: removing its
wait saves nothing (the hand-off whose lock-free fix measured 1.008x). A working
thread is one that waits here or runs on the CPU at least WORKING of its wall time
(a main thread blocked in join is not). Nor can the program end sooner than its
threads' CPU time spread over the machine's CPUs (the run's `cpus` fact): three
consumers on two cores that wait on a lock leave the cores to the others, and a
lock-free queue then saves nothing. The sum of the waiters' time is kept as
details["waiters_fraction"], the figure before this measure.

Only contention counts: threads blocked acquiring a mutex (the mutex state), in a
run with another thread that runs meanwhile (the holder). Threads that only wait
on a condition variable are waiting for work or a signal (a pool's idle workers:
zstd -T4), not for a lock; a single-threaded program has no contention. The
lock-free queue is suggested to C++ programs only.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from ..binaries import binary_at
from ..model.findings import Finding
from ..model.profile import Frame, Profile
from . import Context
from .wait_sites import (
    UNKNOWN,
    Site,
    ThreadTime,
    Wait,
    is_library,
    thread_totals,
    threads_text,
    waits,
    where,
)

NS = 1e9
CONDVAR_FUNCTION_PREFIXES = ("pthread_cond_", "__pthread_cond_", "___pthread_cond_")
CONDVAR_MANGLED = "condition_variable"  # in std::condition_variable's mangled names too
# Calls a lock's holder wakes its waiters in (glibc's names, as the symbolizer gives them)
WAKING_CALLS = (
    "pthread_cond_signal",
    "pthread_cond_broadcast",
    "___pthread_cond_signal",
    "___pthread_cond_broadcast",
    "pthread_mutex_unlock",
    "___pthread_mutex_unlock",
    "__pthread_mutex_unlock",
)
SYSTEM_DIRS = ("/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/")
# Lock calls whose holder no mode reads (wallsnap reads a glibc mutex's owner word):
# Rust's std locks and parking_lot's (lock_api), crossbeam's channels
UNREAD_LOCK_CALLS = (
    "std::sync::",
    "std::sys::",
    "<std::sys::",
    "std::thread::",
    "lock_api::",
    "<lock_api::",
    "parking_lot",
    "<parking_lot",
    "crossbeam",
    "<crossbeam",
)
# ...and reader-writer locks' (std::shared_mutex is a pthread_rwlock_t: no owner word)
RWLOCK_MARKERS = ("rwlock", "shared_mutex", "shared_lock", "shared_timed_mutex")
RUST_ONLY = ("core::", "<core::", "alloc::", "<alloc::", "std::rt::", "std::sys::", "<std::sys::")
CONCURRENTQUEUE_HEADER = "/usr/include/concurrentqueue/blockingconcurrentqueue.h"
WORKING = 0.1  # on-CPU part of a thread's wall time that makes it part of the program's progress
# the part of the critical-path wait a fix removes: all of it (per-thread data, a
# lock-free queue) down to a third (a shorter critical section still serialises)
SAVING_RANGE = (0.3, 1.0)


# zstd -T4's main thread waits for its jobs in ZSTDMT_flushProduced, 98% in
# pthread_cond_wait and 2% retaking its mutex: wall mode called it lock contention
# ("shorten the critical section, shard the lock"), gain 1.9%.
MIN_MUTEX_SHARE = 0.1


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    found = list(waits(profile, ("lock",)))
    if not found:
        return []
    thread_time = thread_totals(profile)
    handoff = uses_condition_variables(profile) or any(
        imports_condition_variables(d.get("path", "")) for d in (ctx.run.dsos if ctx.run else [])
    )
    cpp = is_cpp(profile)
    cpus = int((ctx.run.meta.get("cpus") if ctx.run else None) or os.cpu_count() or 1)
    findings = [
        _lock_finding(profile, wait, thread_time, handoff, cpp, cpus)
        for wait in found
        if is_contention(wait, thread_time)
    ]
    return sorted(findings, key=lambda f: -f.estimated_gain)


def is_contention(wait: Wait, thread_time: ThreadTime) -> bool:
    """Threads blocked on a mutex while another thread runs (holding it): a waiter and
    any other thread that ran, itself a waiter at other times or not. A site whose
    waits are nearly all condition waits waits for work or a signal: its few mutex
    samples are the condition wait retaking its mutex (MIN_MUTEX_SHARE)."""
    site = wait.site
    if site.by_state.get("mutex", 0.0) < MIN_MUTEX_SHARE * site.total:
        return False
    running = {t for t, w in thread_time.running.items() if w > 0}
    return any(running - {waiter} for waiter in site.by_thread)


def is_cpp(profile: Profile) -> bool:
    """C++ (its std:: frames or libstdc++), not Rust, whose std is std:: too."""
    if any(f.file.endswith(".rs") or f.function.startswith(RUST_ONLY) for f in profile.frames):
        return False
    return any(
        f.function.startswith("std::") or f.dso.startswith("libstdc++") for f in profile.frames
    )


def uses_condition_variables(profile: Profile) -> bool:
    """Any condition-variable code in the run: the signature of a hand-off queue."""
    return any(
        "condition_variable" in f.function or f.function.startswith(CONDVAR_FUNCTION_PREFIXES)
        for f in profile.frames
    )


@lru_cache(maxsize=256)
def imports_condition_variables(path: str) -> bool:
    """The program (not a system library) calls condition-variable functions."""
    if not path.startswith("/") or path.startswith(SYSTEM_DIRS):
        return False
    binary = binary_at(path)
    names = [sym.name for sym in binary.symbols(".dynsym")] if binary else []
    return any(CONDVAR_MANGLED in n or n.startswith(CONDVAR_FUNCTION_PREFIXES) for n in names)


def _under_the_lock(profile: Profile, site: Site) -> list[tuple[str, float]] | None:
    """What the lock's holder ran while threads waited at site, at the same instants
    (wall mode's lock_holders: the holder of each waited-on glibc mutex): its innermost
    function of the program's own, by share. None when the run cannot tell (other
    modes, another kind of lock, or no holder seen)."""
    by_function: dict[str, float] = defaultdict(float)
    for waiter, holder, ns in profile.meta.get("lock_holders", []):
        if site.frame.function not in waiter:
            continue
        frames = [Frame(function, dso=dso, file=file) for function, dso, file in holder]
        by_function[_innermost_named(frames)] += ns
    return _top_shares(by_function) if by_function else None


def _innermost_named(frames: list[Frame]) -> str:
    """The holder's innermost frame outside the system's libraries that has a name; a
    stripped library's static functions ("[unknown] libsqlite3.so.0+0xaa310", wall
    mode's) give way to the first named one (sqlite3PagerCommitPhaseOne, the program's
    own function): an unnamed one only when none is named."""
    own = [f for f in frames if not is_library(f) and f.function != UNKNOWN]
    named = next((f for f in own if not f.function.startswith(UNKNOWN)), None)
    innermost = named or (own[0] if own else None)
    if innermost is None:
        return "[a library]"
    waking = _waking_call(frames[: frames.index(innermost)])
    return f"{waking} in {innermost.function}" if waking else innermost.function


def _waking_call(inner: list[Frame]) -> str:
    """The signal, broadcast or unlock the holder is in (its frames leafward of its own
    code), or "": pigz's holder was "twist_ 100%", yarn.c's wrapper that broadcasts
    under the lock, then unlocks; what runs under the lock is the wake-up."""
    calls = (f.function for f in reversed(inner) if is_library(f))
    return next((c for c in calls if c.startswith(WAKING_CALLS)), "")


def _top_shares(weights: dict[str, float]) -> list[tuple[str, float]]:
    total = sum(weights.values()) or 1.0
    return [(name, w / total) for name, w in sorted(weights.items(), key=lambda kv: -kv[1])[:3]]


def _critical_section(profile: Profile, site: Site) -> list[tuple[str, float]]:
    """What the waiting function runs on the CPU (all threads): the callees it
    executes, by share of its running time — under the lock or not."""
    by_callee: dict[str, float] = defaultdict(float)
    for stack, weight, _count, _t, state in profile.rows():
        if state != "running":
            continue
        frames = [profile.frames[f] for f in stack]
        try:
            depth = next(i for i, f in enumerate(frames) if f.function == site.frame.function)
        except StopIteration:
            continue
        callee = next((f for f in reversed(frames[:depth]) if not is_library(f)), site.frame)
        by_callee[callee.function] += weight
    return _top_shares(by_callee)


def _lock_finding(
    profile: Profile, wait: Wait, thread_time: ThreadTime, handoff: bool, cpp: bool, cpus: int
) -> Finding:
    """`handoff`: the program uses condition variables; `cpp`: it is C++ (the queue
    suggested is a C++ library)."""
    site = wait.site
    states = {s: w / site.total for s, w in site.by_state.items() if w > 0}
    under = _under_the_lock(profile, site)
    holders = under if under is not None else _critical_section(profile, site)
    handoff = cpp and (handoff or "condvar" in states)
    path = critical_path(site, thread_time, cpus)
    low, high = SAVING_RANGE
    return Finding(
        rule="lock.contention",
        kind="lock-contention",
        title=f"{100 * path.gain:.1f}% of the program's wall time waits on a lock or condition "
        f"variable ({100 * wait.fraction:.1f}% of the waiting threads' time): {where(site)}",
        function=site.frame.function,
        dso=site.frame.dso,
        file=site.frame.file,
        line=site.frame.line,
        share=max(wait.share, path.gain),
        estimated_gain=path.gain,
        gain_low=path.gain * low,
        gain_high=path.gain * high,
        gain_basis=(
            "the critical path: the wall time the program would save if these waits were gone "
            f"({path.text(profile)}); a shorter critical section keeps part of it"
        ),
        confidence=0.5 if site.inferred or not site.frame.file else 0.7,
        evidence=[
            *_evidence(profile, site, states, thread_time),
            _holders_text(site, holders, under is not None, "lock_holders" in profile.meta),
            path.text(profile),
        ],
        suggestion=_lock_suggestion(handoff, _wakes_under_the_lock(under)),
        fix=(
            {"package": "libconcurrentqueue-dev", "include": CONCURRENTQUEUE_HEADER}
            if handoff
            else {}
        ),
        details={
            "states": states,
            "threads": _thread_details(profile, site, thread_time),
            "holders": [{"function": n, "share": s} for n, s in holders],
            "holders_under_the_lock": under is not None,
            "waiters_fraction": wait.fraction,
            "critical_path": path.gain,
        },
    )


@dataclass
class CriticalPath:
    """The program's wall time (its longest-lived working thread) against the time it
    would take without the waits at one site."""

    gain: float  # 1 - without / wall
    wall: float
    without: float
    last: int  # the thread that would still end last (thread index)
    cpu_bound: float  # the threads' CPU time over the machine's CPUs
    cpus: int

    def text(self, profile: Profile) -> str:
        head = (
            f"critical path: the working threads span {self.wall / NS:.2f} s; without these waits"
        )
        if self.cpu_bound >= self.without:
            return (
                f"{head} their CPU time alone still needs {self.cpu_bound / NS:.2f} s "
                f"of the {self.cpus} CPU(s)"
            )
        thread = profile.threads[self.last] if self.last >= 0 else None
        name = f"{thread.name or '?'}:{thread.tid}" if thread else "?"
        return f"{head} the last to finish ({name}) would need {self.without / NS:.2f} s"


def critical_path(site: Site, thread_time: ThreadTime, cpus: int) -> CriticalPath:
    """The wall time the waits at SITE hold the program back (see the module's doc)."""
    working = [
        t
        for t, total in thread_time.total.items()
        if total > 0 and (t in site.by_thread or thread_time.running.get(t, 0.0) >= WORKING * total)
    ]
    if not working:
        return CriticalPath(0.0, 0.0, 0.0, -1, 0.0, cpus)
    wall = max(thread_time.total[t] for t in working)
    last = max(working, key=lambda t: thread_time.total[t] - site.by_thread.get(t, 0.0))
    alone = thread_time.total[last] - site.by_thread.get(last, 0.0)
    cpu_bound = sum(thread_time.running.values()) / max(1, cpus)
    without = max(alone, cpu_bound)
    return CriticalPath(max(0.0, 1.0 - without / wall), wall, alone, last, cpu_bound, cpus)


def _evidence(
    profile: Profile,
    site: Site,
    states: dict[str, float],
    thread_time: ThreadTime,
) -> list[str]:
    waiting_in = sorted(site.wait_functions.items(), key=lambda kv: -kv[1])[:3]
    evidence = [
        f"threads waiting here: {threads_text(profile, site, thread_time)} of their wall time",
        "waiting in: " + ", ".join(f"{name} {100 * w / site.total:.0f}%" for name, w in waiting_in),
        "by state: " + ", ".join(f"{s} {100 * v:.0f}%" for s, v in states.items()),
    ]
    lines = sorted(site.by_line.items(), key=lambda kv: -kv[1])
    if site.frame.file and len(lines) > 1:
        evidence.append(
            "lines: " + ", ".join(f"{ln} {100 * w / site.total:.0f}%" for ln, w in lines[:4])
        )
    if site.inferred:
        evidence.append(
            "the stacks stop inside libc (built without frame pointers), so the exact call "
            "is not visible; `perfsleuth record --mode wall` shows its line"
        )
    return evidence


def _holders_text(
    site: Site, holders: list[tuple[str, float]], under: bool, holders_read: bool
) -> str:
    """The code under the lock where the run names the holder of each wait (wall
    mode, glibc mutexes); else what the waiting function runs, said to be no more.
    `holders_read`: the run read holders (wallsnap's), none of them at this site."""
    shares = ", ".join(f"{name} {100 * s:.0f}%" for name, s in holders)
    unread = {n: w for n, w in site.wait_functions.items() if _holder_unread(n)}
    if under and unread:
        return (
            f"under the glibc mutex, its holder runs: {shares} (at the instants threads waited "
            f"on it); {100 * sum(unread.values()) / site.total:.0f}% of the waits here are on "
            f"locks whose holder is not read ({', '.join(unread)}): what runs under those "
            "is not said"
        )
    if under:
        return f"under the lock, its holder runs: {shares} (at the instants threads waited)"
    seen = f"meanwhile {site.frame.function} runs: {shares}; " if holders else ""
    if site.wait_functions and len(unread) == len(site.wait_functions):
        return (
            f"{seen}which code runs under the lock no mode can tell: its holder is not "
            "recorded (only a glibc mutex's is read, in wall mode)"
        )
    if holders_read:
        return (
            f"{seen}which code runs under the lock this run cannot tell: no holder of these "
            "waits was seen (a condition variable has none; only a glibc mutex's is read)"
        )
    return (
        f"{seen}which code runs under the lock this run cannot tell (`perfsleuth record "
        "--mode wall` reads the holder of each waited-on mutex)"
    )


def _holder_unread(wait_function: str) -> bool:
    """A lock call whose holder no mode reads."""
    return wait_function.startswith(UNREAD_LOCK_CALLS) or any(
        marker in wait_function for marker in RWLOCK_MARKERS
    )


def _wakes_under_the_lock(under: list[tuple[str, float]] | None) -> bool:
    """The holder seen most at the waits is waking waiters (_waking_call)."""
    return bool(under and under[0][0].startswith(WAKING_CALLS))


def _lock_suggestion(handoff: bool, waking: bool = False) -> str:
    """`waking`: the holder is mostly seen waking waiters under the lock."""
    common = (
        "shorten the critical section (move work such as statistics or formatting out of "
        "the lock), shard the lock or the data it guards, and batch: take several items "
        "per lock acquisition"
    )
    if waking:
        common = (
            "signal or broadcast after unlocking, not under the lock: its holder is seen "
            "waking waiters while it holds it (each woken thread then blocks on the lock at "
            f"once), or {common}"
        )
    if handoff:
        return (
            "This is a producer-consumer hand-off through a mutex-protected queue: replace "
            "std::mutex + std::condition_variable + the queue with a lock-free queue such as "
            "moodycamel::BlockingConcurrentQueue (apt-get install libconcurrentqueue-dev; "
            f"#include <concurrentqueue/blockingconcurrentqueue.h>), or {common}"
        )
    return common[0].upper() + common[1:]


def _thread_details(profile: Profile, site: Site, thread_time: ThreadTime) -> list[dict]:
    rows = []
    for t, w in sorted(site.by_thread.items(), key=lambda kv: -kv[1]):
        thread = profile.threads[t] if t >= 0 else None
        rows.append(
            {
                "tid": thread.tid if thread else 0,
                "name": thread.name if thread else "",
                "waiting": w / (thread_time.total[t] or 1.0),
            }
        )
    return rows
