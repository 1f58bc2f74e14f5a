"""What a thread is doing, from its stack and the kernel's view of it.

A stack (leaf first, kernel and user frames) and the kernel's scheduler state
give one of states.STATES: running, mutex, condvar, io, sleep, other. The
rules are data: each names a state and the function names (exact, or prefixes
ending in `*`) that decide it. Frames are read from the leaf outwards and the
first frame any rule names decides; futex and syscall plumbing is named by no
rule, so it is looked through until a libc or kernel frame says what the wait
is for (the same futex serves mutexes, condition variables and joins).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model.profile import Frame


@dataclass(frozen=True)
class Rule:
    state: str
    functions: tuple[str, ...]


RULES: tuple[Rule, ...] = (
    Rule(
        "mutex",
        (
            "__lll_lock_wait",
            "__GI___lll_lock_wait",
            "__lll_lock_wait_private",
            "__GI___lll_lock_wait_private",
            "pthread_mutex_lock",
            "___pthread_mutex_lock",
            "__pthread_mutex_lock*",
            "pthread_mutex_timedlock",
            "__pthread_mutex_clocklock*",
            "pthread_rwlock_rdlock",
            "pthread_rwlock_wrlock",
            "___pthread_rwlock_rdlock",
            "___pthread_rwlock_wrlock",
            "__pthread_rwlock_*lock_full*",
            "pthread_spin_lock",
            "std::mutex::lock*",
            "std::shared_mutex::lock*",
            "std::timed_mutex::*lock*",
            "std::recursive_mutex::lock*",
            "std::sys::sync::mutex::*",
            "std::sync::mutex::Mutex*::lock",
            # Rust 1.84+: an inherent impl demangles as <path>::method, and the
            # poisoning locks moved to std::sync::poison (not the unlocks' wakes)
            "<std::sys::sync::mutex::futex::Mutex>::lock*",
            "<std::sys::sync::mutex::pthread::Mutex>::lock*",
            "std::sync::poison::mutex::Mutex*::lock",
            "<std::sys::sync::rwlock::futex::RwLock>::read",
            "<std::sys::sync::rwlock::futex::RwLock>::write",
            "<std::sys::sync::rwlock::futex::RwLock>::read_contended",
            "<std::sys::sync::rwlock::futex::RwLock>::write_contended",
            "parking_lot::raw_mutex::*lock_slow",
            "rwsem_down_*",
            "__mutex_lock*",
        ),
    ),
    Rule(
        "condvar",
        (
            "pthread_cond_wait*",
            "___pthread_cond_wait",
            "__pthread_cond_wait*",
            "pthread_cond_timedwait*",
            "___pthread_cond_timedwait*",
            "__pthread_cond_clockwait*",
            "pthread_cond_clockwait",
            "std::condition_variable::wait*",
            "std::condition_variable_any::wait*",
            "std::sys::sync::condvar::*",
            "<std::sys::sync::condvar::futex::Condvar>::wait*",
            "<std::sys::sync::condvar::pthread::Condvar>::wait*",
            "std::sync::poison::condvar::Condvar::wait*",
            "std::sync::condvar::Condvar::wait*",
            "sem_wait",
            "sem_timedwait",
            "sem_clockwait",
            "__new_sem_wait*",
            "do_futex_wait*",
        ),
    ),
    Rule(
        "sleep",
        (
            "nanosleep",
            "__nanosleep",
            "clock_nanosleep*",
            "__clock_nanosleep*",
            "usleep",
            "sleep",
            "std::this_thread::sleep_for*",
            "std::thread::sleep*",
            "hrtimer_nanosleep",
            "do_nanosleep",
            "common_nsleep",
            "sched_yield",
            "__sched_yield",
            "do_sched_yield",
            "pause",
        ),
    ),
    Rule(
        "io",
        (
            "read",
            "__read",
            "__libc_read",
            "__GI___libc_read",
            "pread64",
            "__libc_pread*",
            "readv",
            "write",
            "__write",
            "__libc_write",
            "__GI___libc_write",
            "pwrite64",
            "writev",
            "poll",
            "__poll",
            "ppoll",
            "__ppoll",
            "select",
            "__select",
            "pselect*",
            "epoll_wait",
            "epoll_pwait*",
            "accept",
            "accept4",
            "connect",
            "__libc_connect",
            "recv",
            "recvfrom",
            "recvmsg",
            "__libc_recv*",
            "send",
            "sendto",
            "sendmsg",
            "__libc_send*",
            "fsync",
            "fdatasync",
            "__libc_open64",
            "open64",
            "openat64",
            "__open64_nocancel",
            "io_getevents",
            "io_uring_enter",
            "__sys_io_uring_enter*",
            "do_sys_poll",
            "do_select",
            "core_sys_select",
            "do_epoll_wait",
            "ep_poll",
            "pipe_read",
            "pipe_write",
            "wait_woken",
            "sk_wait_data",
            "tcp_recvmsg*",
            "unix_stream_read_generic",
            "io_schedule*",
            "folio_wait_bit*",
            "wait_on_page_bit*",
            "blk_mq_*",
            "jbd2_*",
            "n_tty_read",
            "tty_read",
        ),
    ),
    Rule(
        "other",
        (
            "pthread_join",
            "__pthread_join",
            "__pthread_clockjoin_ex",
            "___pthread_join",
            "wait4",
            "__wait4",
            "waitpid",
            "__waitpid",
            "waitid",
            "kernel_wait4",
            "do_wait",
            "sigtimedwait",
            "__sigtimedwait",
            "do_sigtimedwait",
            "sigsuspend",
        ),
    ),
)

# Kernel scheduler states (letters of /proc/*/stat) that mean "wants the CPU".
RUNNABLE_KERNEL_STATES = ("R",)


class Classifier:
    """Matches frames against RULES; exact names by dict lookup, prefixes in order."""

    def __init__(self, rules: Sequence[Rule] = RULES) -> None:
        self._exact: dict[str, str] = {}
        self._prefixes: list[tuple[str, str]] = []
        for rule in rules:
            for name in rule.functions:
                if name.endswith("*"):
                    self._prefixes.append((name[:-1], rule.state))
                else:
                    self._exact.setdefault(name, rule.state)
        self._cache: dict[str, str] = {}

    def state_of_function(self, function: str) -> str:
        """The state a function names, or '' when it says nothing."""
        hit = self._cache.get(function)
        if hit is None:
            hit = self._match(function)
            self._cache[function] = hit
        return hit

    def _match(self, function: str) -> str:
        bare = function.split("(", 1)[0]
        state = self._exact.get(bare)
        if state:
            return state
        for prefix, prefix_state in self._prefixes:
            if bare.startswith(prefix):
                return prefix_state
        return ""

    def classify(self, frames: Iterable[Frame], kernel_state: str = "") -> str:
        """State of a thread with this stack (leaf first) and scheduler state.

        kernel_state is a /proc stat letter (R, S, D, ...); "R" for an
        on-CPU sample or a preempted thread. A runnable thread inside a wait
        function (woken, not yet back on a CPU) still counts as waiting there,
        as the program's own timing of that call would.
        """
        for frame in frames:
            state = self.state_of_function(frame.function)
            if state:
                return state
        return "running" if kernel_state in RUNNABLE_KERNEL_STATES else "other"


DEFAULT = Classifier()


def classify(frames: Iterable[Frame], kernel_state: str = "") -> str:
    return DEFAULT.classify(frames, kernel_state)
