"""Lock contention and other waiting: where threads block, and what to do about it.

Works on runs whose samples carry thread states and wall time (record --mode
all, wall, offcpu). Waiting samples are grouped by their call site: the first
frame, from the leaf outwards, in the program's own code (not the kernel, libc,
libstdc++ or an inlined std:: wrapper). For each site:

  lock-contention  mutex and condition-variable waits; the share of the waiting
                   threads' wall time spent there, the code the same function
                   runs on the CPU meanwhile (the likely critical section), and
                   the fix: a lock-free queue for producer-consumer hand-offs,
                   shorter critical sections, sharding, batching;
  off-cpu          I/O waits, and sleep/poll loops, on threads that also do
                   real work (an acceptor blocked in accept() all along is idle,
                   not slow).

estimated_gain is the fraction of the waiting threads' wall time explained:
what those threads could spend working instead.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..model.findings import Finding
from ..model.profile import Frame, Profile
from . import Context

LOCK_STATES = ("mutex", "condvar")
UNKNOWN = "[unknown]"
LIBRARY_DSO_PREFIXES = (
    "libc.so",
    "libc-",
    "libpthread",
    "libstdc++",
    "libc++",
    "libgcc_s",
    "ld-linux",
    "ld-",
    "libm.so",
    "[vdso]",
)
LIBRARY_FUNCTION_PREFIXES = ("std::", "__gthread", "__gnu_cxx::", "__pthread", "pthread_")
LIBRARY_FILE_PREFIXES = ("/usr/include/", "/usr/lib/", "./nptl/", "../sysdeps/")
CONDVAR_FUNCTION_PREFIXES = ("pthread_cond_", "__pthread_cond_", "___pthread_cond_")
CONDVAR_MANGLED = "condition_variable"  # in std::condition_variable's mangled names too
SYSTEM_DIRS = ("/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/")
POLL_FUNCTIONS = ("poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait")
MIN_THREAD_FRACTION = 0.02  # of the waiting threads' wall time
MIN_RUN_SHARE = 0.005  # of the run's total weight
# Off-CPU findings are for threads that also work: an acceptor blocked in accept()
# all its life is idle, not slow. A thread "works" when it runs at least this much
# of its time, and the finding needs this much of its time waiting.
MIN_RUNNING = {"io": 0.02, "sleep": 0.05}
MIN_FRACTION = {"io": 0.1, "sleep": 0.05}
# What removing the wait would save, as a fraction of it: I/O can often overlap with
# work; a sleep/poll loop mostly adds latency, and its thread may not be on the
# critical path at all.
IO_GAIN = 0.25
SLEEP_GAIN = 0.1
CONCURRENTQUEUE_HEADER = "/usr/include/concurrentqueue/blockingconcurrentqueue.h"


@dataclass
class Site:
    """Waiting at one call site, by state and thread."""

    frame: Frame
    inferred: bool = False  # frame is the thread's function; the stacks hide the call
    by_state: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_thread: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    by_line: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    wait_functions: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def total(self) -> float:
        return sum(self.by_state.values())


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    if profile.unit != "ns" or not any(
        s in LOCK_STATES + ("io", "sleep") for s in profile.sample_state
    ):
        return []
    thread_time, thread_running = _thread_totals(profile)
    sites = _waiting_sites(profile)
    findings: list[Finding] = []
    handoff = uses_condition_variables(profile) or any(
        imports_condition_variables(d.get("path", "")) for d in (ctx.run.dsos if ctx.run else [])
    )
    for (state_group, _key), site in sites.items():
        waiters_time = sum(thread_time[t] for t in site.by_thread) or 1.0
        fraction = site.total / waiters_time
        share = site.total / (profile.total or 1.0)
        if fraction < MIN_THREAD_FRACTION or share < MIN_RUN_SHARE:
            continue
        if state_group == "lock":
            findings.append(_lock_finding(profile, site, fraction, share, handoff))
        elif (
            _working(site, state_group, thread_time, thread_running)
            and fraction >= MIN_FRACTION[state_group]
        ):
            findings.append(OFFCPU_FINDINGS[state_group](profile, site, fraction, share))
    return sorted(findings, key=lambda f: -f.estimated_gain)


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
    try:
        with open(path, "rb") as fh:
            dynsym = ELFFile(fh).get_section_by_name(".dynsym")
            names = (
                [sym.name for sym in dynsym.iter_symbols()]
                if isinstance(dynsym, SymbolTableSection)
                else []
            )
    except (OSError, ELFError):
        return False
    return any(CONDVAR_MANGLED in n or n.startswith(CONDVAR_FUNCTION_PREFIXES) for n in names)


def _thread_totals(profile: Profile) -> tuple[dict[int, float], dict[int, float]]:
    total: dict[int, float] = defaultdict(float)
    running: dict[int, float] = defaultdict(float)
    for _stack, weight, _count, t, state in profile.rows():
        total[t] += weight
        if state == "running":
            running[t] += weight
    return total, running


def _working(
    site: Site, group: str, thread_time: dict[int, float], thread_running: dict[int, float]
) -> bool:
    return any(thread_running[t] >= MIN_RUNNING[group] * thread_time[t] for t in site.by_thread)


def _state_group(state: str, frames: list[Frame]) -> str:
    if state in LOCK_STATES:
        return "lock"
    if state == "io" and any(f.function.split("(")[0] in POLL_FUNCTIONS for f in frames):
        return "sleep"  # waiting for events in a poll loop, not for data
    return state


def _waiting_sites(profile: Profile) -> dict[tuple[str, tuple[str, str, str]], Site]:
    sites: dict[tuple[str, tuple[str, str, str]], Site] = {}
    entries = thread_entries(profile)
    for stack, weight, _count, t, state in profile.rows():
        if state not in LOCK_STATES + ("io", "sleep"):
            continue
        frames = [profile.frames[f] for f in stack]
        group = _state_group(state, frames)
        caller = call_site(frames)
        inferred = (is_library(caller) or caller.function == UNKNOWN) and _tid(
            profile, t
        ) in entries
        if inferred:
            caller = entries[_tid(profile, t)]
        wait = _wait_function(frames)
        key = (group, (caller.function, caller.dso, wait if inferred else ""))
        site = sites.get(key)
        if site is None:
            site = sites[key] = Site(caller, inferred=inferred)
        site.by_state[state] += weight
        site.by_thread[t] += weight
        site.by_line[caller.line] += weight
        site.wait_functions[wait] += weight
    return sites


def thread_entries(profile: Profile) -> dict[int, Frame]:
    """Per thread, the outermost function of the program's own code in most of
    its samples, by count, so that many short on-CPU samples with complete (DWARF)
    stacks outvote a few long off-CPU ones with truncated stacks (consumer() for a
    consumer thread): it names waits whose stacks
    stop in a library, as eBPF frame-pointer stacks through libc do."""
    votes: dict[int, dict[Frame, float]] = defaultdict(lambda: defaultdict(float))
    for stack, _weight, count, t, _state in profile.rows():
        outer = next(
            (profile.frames[f] for f in reversed(stack) if not is_library(profile.frames[f])),
            None,
        )
        if outer is not None and outer.function != UNKNOWN:
            votes[_tid(profile, t)][replace(outer, line=0)] += count
    return {t: max(v, key=v.__getitem__) for t, v in votes.items()}


def _tid(profile: Profile, t: int) -> int:
    return profile.threads[t].tid if t >= 0 else -1


def is_library(frame: Frame) -> bool:
    return (
        frame.kernel
        or frame.dso.startswith(LIBRARY_DSO_PREFIXES)
        or frame.function.startswith(LIBRARY_FUNCTION_PREFIXES)
        or frame.file.startswith(LIBRARY_FILE_PREFIXES)
    )


def call_site(frames: list[Frame]) -> Frame:
    """The program's own frame nearest the leaf; the outermost library frame
    when the stack shows no program code (e.g. truncated frame-pointer stacks)."""
    for frame in frames:
        if not is_library(frame) and frame.function != UNKNOWN:
            return frame
    user = [f for f in frames if not f.kernel]
    return user[-1] if user else (frames[-1] if frames else Frame(UNKNOWN))


def _wait_function(frames: list[Frame]) -> str:
    """The outermost library function of the wait, as the program called it."""
    outer = ""
    for frame in frames:
        if not is_library(frame):
            break
        if not frame.kernel and frame.function != UNKNOWN:
            outer = frame.function
    return outer or "[kernel]"


def _threads_text(profile: Profile, site: Site, thread_time: dict[int, float]) -> str:
    parts = []
    for t, w in sorted(site.by_thread.items(), key=lambda kv: -kv[1])[:6]:
        thread = profile.threads[t] if t >= 0 else None
        label = f"{thread.name or '?'}:{thread.tid}" if thread else "?"
        parts.append(f"{label} {100 * w / (thread_time[t] or 1):.1f}%")
    return ", ".join(parts)


def _critical_section(profile: Profile, site: Site) -> list[tuple[str, float]]:
    """What the waiting function runs on the CPU (all threads): the callees it
    executes, by share of its running time — the critical section is among them."""
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
    total = sum(by_callee.values()) or 1.0
    top = sorted(by_callee.items(), key=lambda kv: -kv[1])[:3]
    return [(name, w / total) for name, w in top]


def _where(site: Site) -> str:
    f = site.frame
    if site.inferred:
        return f"threads running {f.function}, in {', '.join(site.wait_functions)}"
    return f.function + (f" ({_short(f.file)}:{f.line})" if f.file and f.line else "")


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _lock_finding(
    profile: Profile, site: Site, fraction: float, share: float, handoff: bool
) -> Finding:
    thread_time, _ = _thread_totals(profile)
    states = {s: w / site.total for s, w in site.by_state.items() if w > 0}
    evidence = [
        f"threads waiting here: {_threads_text(profile, site, thread_time)} of their wall time",
        "waiting in: "
        + ", ".join(
            f"{name} {100 * w / site.total:.0f}%"
            for name, w in sorted(site.wait_functions.items(), key=lambda kv: -kv[1])[:3]
        ),
        "by state: " + ", ".join(f"{s} {100 * v:.0f}%" for s, v in states.items()),
    ]
    holders = _critical_section(profile, site)
    if holders:
        evidence.append(
            f"meanwhile {site.frame.function} runs: "
            + ", ".join(f"{name} {100 * s:.0f}%" for name, s in holders)
            + " (the code under the lock is among these)"
        )
    lines = sorted(site.by_line.items(), key=lambda kv: -kv[1])
    if site.frame.file and len(lines) > 1:
        evidence.append(
            "lines: " + ", ".join(f"{ln} {100 * w / site.total:.0f}%" for ln, w in lines[:4])
        )
    handoff = handoff or "condvar" in states
    if site.inferred:
        evidence.append(
            "the stacks stop inside libc (built without frame pointers), so the exact call "
            "is not visible; `perfsleuth record --mode wall` shows its line"
        )
    suggestion = _lock_suggestion(handoff)
    fix = (
        {"package": "libconcurrentqueue-dev", "include": CONCURRENTQUEUE_HEADER} if handoff else {}
    )
    return Finding(
        rule="lock.contention",
        kind="lock-contention",
        title=f"{100 * fraction:.1f}% of the waiting threads' time is spent blocked on a lock "
        f"or condition variable: {_where(site)}",
        function=site.frame.function,
        dso=site.frame.dso,
        file=site.frame.file,
        line=site.frame.line,
        share=share,
        estimated_gain=fraction,
        confidence=0.5 if site.inferred or not site.frame.file else 0.7,
        evidence=evidence,
        suggestion=suggestion,
        fix=fix,
        details={
            "states": states,
            "threads": _thread_details(profile, site, thread_time),
            "holders": [{"function": n, "share": s} for n, s in holders],
        },
    )


def _lock_suggestion(handoff: bool) -> str:
    common = (
        "shorten the critical section (move work such as statistics or formatting out of "
        "the lock), shard the lock or the data it guards, and batch: take several items "
        "per lock acquisition"
    )
    if handoff:
        return (
            "This is a producer-consumer hand-off through a mutex-protected queue: replace "
            "std::mutex + std::condition_variable + the queue with a lock-free queue such as "
            "moodycamel::BlockingConcurrentQueue (apt-get install libconcurrentqueue-dev; "
            f"#include <concurrentqueue/blockingconcurrentqueue.h>), or {common}"
        )
    return common[0].upper() + common[1:]


def _thread_details(profile: Profile, site: Site, thread_time: dict[int, float]) -> list[dict]:
    rows = []
    for t, w in sorted(site.by_thread.items(), key=lambda kv: -kv[1]):
        thread = profile.threads[t] if t >= 0 else None
        rows.append(
            {
                "tid": thread.tid if thread else 0,
                "name": thread.name if thread else "",
                "waiting": w / (thread_time[t] or 1.0),
            }
        )
    return rows


def _io_finding(profile: Profile, site: Site, fraction: float, share: float) -> Finding:
    thread_time, _ = _thread_totals(profile)
    return Finding(
        rule="offcpu.io-wait",
        kind="off-cpu",
        title=f"{100 * fraction:.1f}% of a working thread's time is spent waiting for I/O "
        f"in {_where(site)}",
        function=site.frame.function,
        dso=site.frame.dso,
        file=site.frame.file,
        line=site.frame.line,
        share=share,
        estimated_gain=fraction * IO_GAIN,
        confidence=0.4,
        evidence=[
            f"threads: {_threads_text(profile, site, thread_time)} of their wall time",
            f"waiting in: {', '.join(_by_weight(site.wait_functions))}",
        ],
        suggestion=(
            "Take the I/O off the hot thread (a dedicated I/O thread or asynchronous I/O "
            "such as io_uring), read and write in larger blocks, and buffer or cache what "
            "is read repeatedly"
        ),
    )


def _by_weight(weights: dict[str, float]) -> list[str]:
    return [name for name, _ in sorted(weights.items(), key=lambda kv: -kv[1])]


def _sleep_finding(profile: Profile, site: Site, fraction: float, share: float) -> Finding:
    thread_time, _ = _thread_totals(profile)
    return Finding(
        rule="offcpu.sleep-poll",
        kind="off-cpu",
        title=f"a working thread sleeps or polls {100 * fraction:.1f}% of its time: {_where(site)}",
        function=site.frame.function,
        dso=site.frame.dso,
        file=site.frame.file,
        line=site.frame.line,
        share=share,
        estimated_gain=fraction * SLEEP_GAIN,
        confidence=0.4,
        evidence=[
            f"threads: {_threads_text(profile, site, thread_time)} of their wall time",
            f"waiting in: {', '.join(_by_weight(site.wait_functions))}",
        ],
        suggestion=(
            "Replace the sleep/poll loop with a blocking wait that wakes exactly when there "
            "is work (a condition variable, a semaphore, an eventfd, or a blocking queue "
            "pop), or shorten the timeout the loop sleeps for"
        ),
    )


OFFCPU_FINDINGS = {"io": _io_finding, "sleep": _sleep_finding}
