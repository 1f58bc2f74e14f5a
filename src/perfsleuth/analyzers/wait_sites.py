"""Where threads wait: waiting samples grouped by call site, for the analyzers of
waits (lock_contention.py, io_and_sleep_waits.py). Not an analyzer itself.

Works on runs whose samples carry thread states and wall time (record --mode
all, wall, offcpu). A call site is the first frame, from the leaf outwards, in the
program's own code (not the kernel, libc, libstdc++, an inlined std:: wrapper, a
Rust crate built from Cargo's sources, or libc's functions linked into a static program)
that is not one of its lock wrappers (lock_wrappers.py: pigz's possess_);
when the stacks stop inside a library, the thread's own function stands in for it.
A site counts when it holds a fair part of its threads' wall time and of the run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..collect import thread_state
from ..model.profile import UNKNOWN, Frame, Profile
from .lock_wrappers import Key, lock_wrappers

LOCK_STATES = ("mutex", "condvar")
WAITING_STATES = (*LOCK_STATES, "io", "sleep")
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
# Rust's std, core and alloc are linked into the program: their frames are told by name
# (an inherent impl's method demangles as <std::...>::method)
LIBRARY_FUNCTION_PREFIXES = (
    "std::",
    "<std::",
    "core::",
    "<core::",
    "alloc::",
    "<alloc::",
    "__gthread",
    "__gnu_cxx::",
    "__pthread",
    "pthread_",
)
SHARED_OBJECT = ".so"
LIBRARY_FILE_PREFIXES = ("/usr/include/", "/usr/lib/", "./nptl/", "../sysdeps/")
# A static program holds libc: its threads' and its own start are libc's by name, as
# are the waits thread_state names (__lll_lock_wait, futex_wait, read...)
LIBC_ROOTS = frozenset(
    ("start_thread", "clone", "clone3", "__clone", "__clone3", "_start", "__libc_start_main",
     "__libc_start_call_main")
)  # fmt: skip
# A Rust program's dependencies are built into it from Cargo's source folders
# (parking_lot, crossbeam): their frames are a library's, not the program's
CRATE_SOURCE_DIRS = ("/.cargo/registry/src/", "/.cargo/git/checkouts/")
POLL_FUNCTIONS = ("poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait")
MIN_THREAD_FRACTION = 0.02  # of the waiting threads' wall time
MIN_RUN_SHARE = 0.005  # of the run's total weight


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


@dataclass
class Wait:
    """A site worth a finding: `fraction` of its threads' wall time, `share` of the run."""

    group: str  # "lock", "io" or "sleep" (I/O in a poll loop counts as sleep)
    site: Site
    fraction: float
    share: float


@dataclass
class ThreadTime:
    """Each thread's wall time, and the part of it running on a CPU."""

    total: dict[int, float]
    running: dict[int, float]


def waits(profile: Profile, groups: tuple[str, ...]) -> Iterator[Wait]:
    """The sites of these groups that hold enough of their threads' and the run's time."""
    if profile.unit != "ns" or not any(s in WAITING_STATES for s in profile.sample_state):
        return
    thread_time = thread_totals(profile)
    for (group, _key), site in _waiting_sites(profile).items():
        if group not in groups:
            continue
        waiters_time = sum(thread_time.total[t] for t in site.by_thread) or 1.0
        fraction = site.total / waiters_time
        share = site.total / (profile.total or 1.0)
        if fraction >= MIN_THREAD_FRACTION and share >= MIN_RUN_SHARE:
            yield Wait(group, site, fraction, share)


def thread_totals(profile: Profile) -> ThreadTime:
    total: dict[int, float] = defaultdict(float)
    running: dict[int, float] = defaultdict(float)
    for _stack, weight, _count, t, state in profile.rows():
        total[t] += weight
        if state == "running":
            running[t] += weight
    return ThreadTime(total, running)


def _state_group(state: str, frames: list[Frame]) -> str:
    if state in LOCK_STATES:
        return "lock"
    if state == "io" and any(f.function.split("(")[0] in POLL_FUNCTIONS for f in frames):
        return "sleep"  # waiting for events in a poll loop, not for data
    return state


def _waiting_sites(profile: Profile) -> dict[tuple[str, tuple[str, str, str]], Site]:
    sites: dict[tuple[str, tuple[str, str, str]], Site] = {}
    entries = thread_entries(profile)
    wrappers = lock_wrappers(profile, is_own)
    for stack, weight, _count, t, state in profile.rows():
        if state not in WAITING_STATES:
            continue
        frames = [profile.frames[f] for f in stack]
        group = _state_group(state, frames)
        caller = call_site(frames, wrappers)
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
    for site in sites.values():
        # named by the line where most of its time waits, not the first one seen
        site.frame = replace(site.frame, line=max(site.by_line, key=site.by_line.__getitem__))
    return sites


def thread_entries(profile: Profile) -> dict[int, Frame]:
    """Per thread, the outermost function of the program's own code in most of
    its samples, by count, so that many short on-CPU samples with complete (DWARF)
    stacks outvote a few long off-CPU ones with truncated stacks (consumer() for a
    consumer thread): it names waits whose stacks
    stop in a library, as eBPF frame-pointer stacks through libc do. A thread none
    of whose stacks reaches its root (start_thread, _start...) has no outermost
    function of its own to tell: it takes the one voted over all such threads of its
    name (sysbench's workers each got whichever of two functions of the loop had
    more of their few samples, and one lock was two findings)."""
    votes: dict[int, dict[Frame, float]] = defaultdict(lambda: defaultdict(float))
    rooted: set[int] = set()
    names: dict[int, str] = {}
    for stack, _weight, count, t, _state in profile.rows():
        frames = [profile.frames[f] for f in stack]
        tid = _tid(profile, t)
        names[tid] = profile.threads[t].name if t >= 0 else ""
        if any(f.function in LIBC_ROOTS for f in frames):
            rooted.add(tid)
        outer = next((f for f in reversed(frames) if not is_library(f)), None)
        if outer is not None and outer.function != UNKNOWN:
            votes[tid][replace(outer, line=0)] += count
    by_name = _votes_by_name({t: v for t, v in votes.items() if t not in rooted}, names)
    entries = {}
    for tid, v in votes.items():
        pooled = v if tid in rooted else by_name[names[tid]]
        entries[tid] = max(pooled, key=pooled.__getitem__)
    return entries


def _votes_by_name(
    votes: dict[int, dict[Frame, float]], names: dict[int, str]
) -> dict[str, dict[Frame, float]]:
    pooled: dict[str, dict[Frame, float]] = defaultdict(lambda: defaultdict(float))
    for tid, v in votes.items():
        for frame, n in v.items():
            pooled[names[tid]][frame] += n
    return pooled


def _tid(profile: Profile, t: int) -> int:
    return profile.threads[t].tid if t >= 0 else -1


def is_library(frame: Frame) -> bool:
    return (
        frame.kernel
        or frame.dso.startswith(LIBRARY_DSO_PREFIXES)
        or frame.function.startswith(LIBRARY_FUNCTION_PREFIXES)
        or frame.file.startswith(LIBRARY_FILE_PREFIXES)
        or any(d in frame.file for d in CRATE_SOURCE_DIRS)
        or frame.function in LIBC_ROOTS
        or thread_state.DEFAULT.state_of_function(frame.function) != ""
        or _unnamed_in_shared_library(frame)
    )


def _unnamed_in_shared_library(frame: Frame) -> bool:
    """A stripped shared library's static function (`[unknown] libglib-2.0.so.0+0xa8970`,
    GLib's GMutex slow path, tail-called from g_mutex_lock): a library's, not the
    program's call site."""
    return frame.function.startswith(UNKNOWN) and SHARED_OBJECT in frame.dso


def is_own(frame: Frame) -> bool:
    """A frame of the program's own code, named."""
    return not is_library(frame) and frame.function != UNKNOWN


def call_site(frames: list[Frame], wrappers: frozenset[Key] = frozenset()) -> Frame:
    """The program's own frame nearest the leaf that is not a lock wrapper (the
    wrapper itself when nothing of the program's calls it); the outermost library
    frame when the stack shows no program code (e.g. truncated frame-pointer stacks)."""
    own = [f for f in frames if is_own(f)]
    if own:
        return next((f for f in own if (f.function, f.dso) not in wrappers), own[0])
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


def threads_text(profile: Profile, site: Site, thread_time: ThreadTime) -> str:
    """The site's busiest waiting threads, with the part of their wall time spent there."""
    parts = []
    for t, w in sorted(site.by_thread.items(), key=lambda kv: -kv[1])[:6]:
        thread = profile.threads[t] if t >= 0 else None
        label = f"{thread.name or '?'}:{thread.tid}" if thread else "?"
        parts.append(f"{label} {100 * w / (thread_time.total[t] or 1):.1f}%")
    return ", ".join(parts)


def where(site: Site) -> str:
    f = site.frame
    if site.inferred:
        return f"threads running {f.function}, in {', '.join(site.wait_functions)}"
    return f.function + (f" ({_short(f.file)}:{f.line})" if f.file and f.line else "")


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]
