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

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..model.profile import UNKNOWN, Frame


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
            # parking_lot: the slow paths spin (sched_yield), then park on a futex
            "parking_lot::raw_mutex::RawMutex::lock_slow",
            "<parking_lot::raw_mutex::RawMutex>::lock_slow",
            "parking_lot::raw_rwlock::RawRwLock::lock_*_slow",
            "<parking_lot::raw_rwlock::RawRwLock>::lock_*_slow",
            "parking_lot::raw_rwlock::RawRwLock::wait_for_readers",
            "<parking_lot::raw_rwlock::RawRwLock>::wait_for_readers",
            # lock_api's generic lock calls (parking_lot's, spin's): a frame-pointer
            # stack keeps them (inlined at the caller) where it loses the slow path
            "lock_api::mutex::Mutex<R,T>::lock",
            "lock_api::rwlock::RwLock<R,T>::read",
            "lock_api::rwlock::RwLock<R,T>::write",
            "rwsem_down_*",
            "__mutex_lock*",
            # GLib's locks (GMutex is a futex of its own on Linux, GRecMutex and
            # GRWLock pthread's; the slow paths are static: UNNAMED_FUTEX_CALLERS)
            "g_mutex_lock",
            "g_rec_mutex_lock",
            "g_rw_lock_reader_lock",
            "g_rw_lock_writer_lock",
            "g_bit_lock",
            "g_pointer_bit_lock*",
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
            # glibc's condition wait retaking its mutex: called by nothing else
            "__pthread_mutex_cond_lock*",
            "std::condition_variable::wait*",
            "std::condition_variable_any::wait*",
            # libstdc++'s futures wait on a futex of their own, not a pthread condvar
            "std::__atomic_futex_unsigned_base::_M_futex_wait_until*",
            "std::__future_base::_State_baseV2::wait*",
            # C++20's waits (std::barrier, std::latch, std::counting_semaphore,
            # std::atomic<T>::wait): libstdc++'s atomic-wait machinery spins with
            # sched_yield, then waits in a futex of its own (template instances
            # demangle with their return type first: "bool std::__detail::...")
            "*std::__detail::__atomic_spin<*",
            "*std::__detail::__platform_wait<*",
            "std::__detail::__waiter_pool::_M_do_wait*",
            "*std::__detail::__waiter<*>::_M_do_wait*",
            "std::__tree_barrier<*>::wait*",
            "std::barrier<*>::*wait*",
            "std::latch::*wait*",
            "std::__atomic_semaphore::_M_acquire*",
            "std::counting_semaphore<*>::*acquire*",
            "std::sys::sync::condvar::*",
            "<std::sys::sync::condvar::futex::Condvar>::wait*",
            "<std::sys::sync::condvar::pthread::Condvar>::wait*",
            "std::sync::poison::condvar::Condvar::wait*",
            "std::sync::condvar::Condvar::wait*",
            "parking_lot::condvar::Condvar::wait*",
            "<parking_lot::condvar::Condvar>::wait*",
            # a thread parked until another unparks it: what Rust's channels, crossbeam's
            # and OnceLock's waits come down to; a channel's send or receive waits for a
            # message or for room (its own spinning, sched_yield, included)
            "std::thread::park*",
            "std::thread::functions::park*",
            "<std::thread::thread::Thread>::park*",
            "<std::sys::sync::thread_parking::*>::park*",  # not unpark: that wakes
            "crossbeam_channel::channel::Receiver<T>::recv*",
            "crossbeam_channel::channel::Sender<T>::send*",
            "crossbeam_channel::context::Context::wait_until",
            "crossbeam_channel::flavors::*::Channel<T>::recv*",
            "crossbeam_channel::flavors::*::Channel<T>::send*",
            # std's mpsc channels are crossbeam's, as std::sync::mpmc (Rust 1.67+)
            "std::sync::mpsc::Receiver<T>::recv*",
            "std::sync::mpsc::*Sender<T>::send",
            "std::sync::mpmc::Receiver<T>::recv*",
            "std::sync::mpmc::Sender<T>::send*",
            "std::sync::mpmc::*::Channel<T>::recv*",
            "std::sync::mpmc::*::Channel<T>::send*",
            "<std::sync::mpmc::context::Context>::wait_until",
            "std::sync::mpmc::context::Context::wait_until",
            # GLib's condition variables (futexes of their own) and the queue its
            # thread pools wait on
            "g_cond_wait",
            "g_cond_wait_until",
            "g_async_queue_pop*",
            "g_async_queue_timeout_pop*",
            # barriers: std's (a Mutex + Condvar inside), glibc's (a futex of its own)
            "<std::sync::barrier::Barrier>::wait",
            "std::sync::barrier::Barrier::wait",
            "pthread_barrier_wait",
            "___pthread_barrier_wait",
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

# A yield gives the CPU away and runs on: inside a lock's or a channel's slow path
# (parking_lot and crossbeam spin with sched_yield before they park) it is that
# wait, as the program's timing of the call counts it; alone it is a sleep.
YIELDS = frozenset(("sched_yield", "__sched_yield", "do_sched_yield"))
SPINNING_WAITS = ("mutex", "condvar")

# A lock taken inside a condition wait, a barrier's or a queue's wait (a condvar rule
# further out) is that wait's own: pthread_cond_wait retaking its mutex, Rust's
# Condvar::wait and Barrier::wait taking theirs, g_async_queue_pop its GMutex. The
# program's timing of the call counts it as the wait: xz -T4's main thread, woken while
# its worker still held the mutex, read 5.6% `mutex` where its clock counted 0.01% of
# lock calls and all of it inside its condition waits.
OWN_LOCK_OF = "condvar"

# Libraries whose static (unnamed, in a stripped build) functions wait in a futex
# through libc's syscall(): a thread whose stack shows such a function right above
# syscall() is in that state, runnable too (woken, not yet back: the program's clock
# counts it). GLib's GMutex slow path and bit locks are static, and g_mutex_lock
# tail-calls the slow path, so the stack reads worker -> [unknown] libglib -> syscall;
# its condition variables' waits are exported (g_cond_wait*), and g_mutex_unlock's
# wake shows no unnamed frame (wall mode read 178 ms of glibqueue's lock waits
# `running` when only a blocked thread's counted).
SYSCALL = "syscall"
UNNAMED_FUTEX_CALLERS: tuple[Rule, ...] = (Rule("mutex", ("libglib-2.0.so*",)),)

WRITE_CALLS = frozenset(
    ("write", "__write", "__libc_write", "__GI___libc_write", "pwrite64", "writev", "send",
     "sendto", "sendmsg", "__libc_send", "__libc_sendto", "__libc_sendmsg")
)  # fmt: skip

# Waits for events (user and kernel names): no I/O work is done inside, so a thread there
# on the CPU or preempted is waiting, as in a lock call (_io_done). memcached's workers,
# whose clock around libevent's epoll_wait counts the call whole, read `io` 4.8 points
# under it in offcpu and all modes when their time on the CPU there was `running`.
EVENT_WAITS = frozenset(
    ("poll", "__poll", "ppoll", "__ppoll", "select", "__select", "pselect", "pselect6",
     "epoll_wait", "epoll_pwait", "epoll_pwait2", "do_sys_poll", "do_select",
     "core_sys_select", "do_epoll_wait", "ep_poll")
)  # fmt: skip

# Kernel scheduler states (letters of /proc/*/stat) that mean "wants the CPU".
RUNNABLE_KERNEL_STATES = ("R",)


class Classifier:
    """Matches frames against RULES: exact names by dict lookup, patterns in order
    (a trailing `*` a prefix, a `*` elsewhere any run of characters)."""

    def __init__(
        self, rules: Sequence[Rule] = RULES, unnamed: Sequence[Rule] = UNNAMED_FUTEX_CALLERS
    ) -> None:
        self._unnamed = [(rule.state, dso) for rule in unnamed for dso in rule.functions]
        self._exact: dict[str, str] = {}
        self._patterns: list[tuple[Callable[[str], bool], str]] = []
        for rule in rules:
            for name in rule.functions:
                if "*" not in name:
                    self._exact.setdefault(name, rule.state)
                elif name.index("*") == len(name) - 1:
                    self._patterns.append((_starts_with(name[:-1]), rule.state))
                else:
                    glob = re.compile(fnmatch.translate(name))
                    self._patterns.append((_full_match(glob), rule.state))
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
        for matches, pattern_state in self._patterns:
            if matches(bare):
                return pattern_state
        return ""

    def _classify(self, frames: list[Frame], kernel_state: str) -> str:
        yielded = previous = ""
        for i, frame in enumerate(frames):
            state = self.state_of_function(frame.function)
            if not state and previous == SYSCALL:
                state = self._unnamed_caller_state(frame)
            previous = frame.function
            if not state:
                continue
            if frame.function.split("(", 1)[0] in YIELDS:
                yielded = yielded or state
            elif yielded and state not in SPINNING_WAITS:
                return yielded
            elif state == "mutex":
                return self._enclosing_wait(frames[i + 1 :]) or state
            else:
                return state
        if yielded:
            return yielded
        return "running" if kernel_state in RUNNABLE_KERNEL_STATES else "other"

    def _enclosing_wait(self, outer: list[Frame]) -> str:
        """OWN_LOCK_OF when the first frame further out that names a state other than
        mutex is a condition wait (whose own lock this is), else ''."""
        states = (self.state_of_function(f.function) for f in outer)
        first = next((s for s in states if s and s != "mutex"), "")
        return first if first == OWN_LOCK_OF else ""

    def classify(self, frames: Iterable[Frame], kernel_state: str = "") -> str:
        """State of a thread with this stack (leaf first) and scheduler state.

        kernel_state is a /proc stat letter (R, S, D, ...); "R" for an
        on-CPU sample or a preempted thread. A runnable thread inside a wait
        function (woken, not yet back on a CPU) still counts as waiting there,
        as the program's own timing of that call would; but not an I/O call with a
        kernel stack (on the CPU or preempted there: _io_done). A yield inside a lock's or a
        wait's own spinning is that wait (see SPINNING_WAITS).
        """
        frames = list(frames)
        state = self._classify(frames, kernel_state)
        if state == "io" and kernel_state in RUNNABLE_KERNEL_STATES and self._io_done(frames):
            return "running"
        return state

    def _io_done(self, frames: list[Frame]) -> bool:
        """Is a runnable thread in an I/O call doing no I/O wait? With a kernel stack
        (eBPF's switch-outs, perf's samples) a runnable one is on the CPU or was
        preempted: a blocked one is switched out blocked, and keeps that state until it
        runs again. It may be copying a read's pages (pzstd's reader, preempted in
        filemap_read or sampled in _copy_to_iter: `io` 11-17% of it in offcpu and all
        modes, where the kernel saw it block 0.1%) or past its write (pipewait's
        writers, preempted by the reader they woke: `io` 35%). Without one (wall mode) a
        write is taken for done: one that blocked (a full pipe or socket buffer) and was
        woken is the rare case, a writer preempted by the reader it woke the common one
        (pipewait's writers: wall mode +10 points of io). Never inside a wait for events
        (EVENT_WAITS)."""
        call = self._io_call(frames)
        if call in EVENT_WAITS:
            return False
        return call in WRITE_CALLS or any(f.kernel for f in frames)

    def _io_call(self, frames: list[Frame]) -> str:
        """The innermost I/O call of a stack (a function's bare name), or ''."""
        calls = (f.function.split("(", 1)[0] for f in frames)
        return next((c for c in calls if self.state_of_function(c) == "io"), "")

    def in_event_wait(self, frames: Iterable[Frame]) -> bool:
        """Is the stack's innermost I/O call a wait for events (EVENT_WAITS)?"""
        return self._io_call(list(frames)) in EVENT_WAITS

    def _unnamed_caller_state(self, frame: Frame) -> str:
        """The state of a wait in syscall() called by a library's unnamed function
        (UNNAMED_FUTEX_CALLERS), or ''."""
        if not frame.function.startswith(UNKNOWN):
            return ""
        return next((s for s, dso in self._unnamed if fnmatch.fnmatch(frame.dso, dso)), "")


def _starts_with(prefix: str) -> Callable[[str], bool]:
    return lambda name: name.startswith(prefix)


def _full_match(glob: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda name: glob.match(name) is not None


DEFAULT = Classifier()


def classify(frames: Iterable[Frame], kernel_state: str = "") -> str:
    return DEFAULT.classify(frames, kernel_state)


def in_event_wait(frames: Iterable[Frame]) -> bool:
    return DEFAULT.in_event_wait(frames)
