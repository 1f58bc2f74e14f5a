"""Thread states from stacks: the rules in collect/thread_state.py."""

import re
from pathlib import Path

from perfsleuth.collect.thread_state import Classifier, Rule, classify
from perfsleuth.model.profile import Frame
from perfsleuth.model.states import STATES

KERNEL_FUTEX = [Frame(n, kernel=True) for n in ("__schedule", "futex_wait", "do_futex")]


def user(*names: str) -> list[Frame]:
    return [Frame(n, dso="libc.so.6") for n in names]


def test_mutex_wait_from_lll_lock_wait():
    frames = KERNEL_FUTEX + user("__GI___lll_lock_wait", "___pthread_mutex_lock", "consumer")
    assert classify(frames, "S") == "mutex"


def test_condvar_wait_looks_through_the_shared_futex_helper():
    frames = KERNEL_FUTEX + user("__futex_abstimed_wait_common", "___pthread_cond_wait", "consumer")
    assert classify(frames, "S") == "condvar"


def test_condvar_relocking_its_mutex_is_the_condition_wait():
    frames = KERNEL_FUTEX + user("__GI___lll_lock_wait", "__pthread_cond_wait_common")
    assert classify(frames, "S") == "condvar"
    # the same lock wait taken by the program itself stays a mutex wait
    frames = KERNEL_FUTEX + user("__GI___lll_lock_wait", "___pthread_mutex_lock", "worker")
    assert classify(frames, "S") == "mutex"


def folded_states(path: Path) -> dict[str, float]:
    """{state: weight} of `perfsleuth flame --folded` stacks re-read by the rules."""
    states: dict[str, float] = {}
    for line in path.read_text().splitlines():
        folded, weight = line.rsplit(" ", 1)
        names = [INLINE_OR_KERNEL.sub("", n) for n in folded.split(";")]
        state = classify([Frame(n) for n in reversed(names)], "S")
        states[state] = states.get(state, 0.0) + float(weight)
    return states


# `perfsleuth flame --folded --state mutex|condvar --thread MAIN` of an all-mode run of
# xz 5.4.1 -T4 (Debian's source, -O2 -g, a clock around liblzma's lock and condition
# calls): the main thread waits for its workers in pthread_cond_timedwait, and 6% of that
# retaking the condition's mutex (__pthread_mutex_cond_lock) from the worker that
# signalled; its clock: 0.01% in lock calls, 88.3% in condition waits
XZ_MAIN_ALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "xz-main-all.folded"


def test_xz_s_main_thread_retaking_its_mutex_waits_in_its_condition_wait():
    assert "__pthread_mutex_cond_lock" in XZ_MAIN_ALL.read_text()
    assert set(folded_states(XZ_MAIN_ALL)) == {"condvar"}


# the same of a wall run of bench/fresh_waits/lotpipe (Rust: parking_lot's Mutex and
# Condvar, std's RwLock and Barrier): std's Barrier::wait takes a Mutex and waits on a
# Condvar, which retakes it; the program times Barrier::wait whole
LOTPIPE_WALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "lotpipe-wall.folded"


def test_a_lock_inside_std_s_barrier_is_the_barrier_s_wait_and_a_rwlock_a_lock():
    by_kind: dict[str, set[str]] = {}
    for line in LOTPIPE_WALL.read_text().splitlines():
        folded, _weight = line.rsplit(" ", 1)
        names = [INLINE_OR_KERNEL.sub("", n) for n in folded.split(";")]
        kind = next(k for k in ("Barrier", "RwLock", "Condvar") if any(k in n for n in names))
        state = classify([Frame(n) for n in reversed(names)], "S")
        by_kind.setdefault(kind, set()).add(state)
    assert by_kind == {"Barrier": {"condvar"}, "RwLock": {"mutex"}, "Condvar": {"condvar"}}
    assert classify(user("futex_wait", "pthread_barrier_wait", "phase"), "S") == "condvar"


def test_io_sleep_and_join():
    assert classify(user("__GI___libc_read", "main"), "S") == "io"
    assert classify([Frame("do_epoll_wait", kernel=True)] + user("main"), "S") == "io"
    assert classify(user("__GI___clock_nanosleep", "__nanosleep", "main"), "S") == "sleep"
    assert classify(user("__futex_abstimed_wait_common", "__pthread_clockjoin_ex"), "S") == "other"


def test_runnable_threads_run_unless_inside_a_wait():
    assert classify(user("process_message", "consumer"), "R") == "running"
    assert classify(user("__GI___lll_lock_wait", "consumer"), "R") == "mutex"
    assert classify(user("process_message"), "S") == "other"


def test_demangled_signatures_match_by_name():
    frames = [Frame("std::mutex::lock()"), Frame("consumer(unsigned long*)")]
    assert classify(frames, "S") == "mutex"


def test_rules_are_data():
    classifier = Classifier([Rule("io", ("my_blocking_fetch", "net_*"))])
    assert classifier.classify([Frame("net_recv_all")], "S") == "io"
    assert classifier.classify([Frame("my_blocking_fetch")], "S") == "io"
    assert classifier.classify([Frame("pthread_mutex_lock")], "S") == "other"


def test_every_rule_state_is_a_profile_state():
    from perfsleuth.collect.thread_state import RULES

    assert {r.state for r in RULES} <= set(STATES)


def rust(*names: str) -> list[Frame]:
    return [Frame(n, dso="tally") for n in names]


# a wall run of a Rust 1.9x program (std::sync::Mutex, rayon): std is linked in, and an
# inherent impl's method demangles as <path>::method; both were "other"
RUST_FUTEX_WAIT = ("syscall", "std::sys::pal::unix::futex::futex_wait")


def test_rust_s_mutex_and_condvar_waits_as_demangled_today():
    mutex = rust(
        *RUST_FUTEX_WAIT,
        "<std::sys::sync::mutex::futex::Mutex>::lock_contended",
        "<std::sys::sync::mutex::futex::Mutex>::lock",
        "std::sync::poison::mutex::Mutex<T>::lock",
        "tally::main::{{closure}}",
    )
    assert classify(mutex, "S") == "mutex"
    condvar = rust(
        *RUST_FUTEX_WAIT,
        "<std::sys::sync::condvar::futex::Condvar>::wait_optional_timeout",
        "<std::sys::sync::condvar::futex::Condvar>::wait",
        "std::sync::poison::condvar::Condvar::wait",
        "rayon_core::latch::LockLatch::wait_and_reset",
    )
    assert classify(condvar, "S") == "condvar"
    read = rust(*RUST_FUTEX_WAIT, "<std::sys::sync::rwlock::futex::RwLock>::read_contended")
    assert classify(read, "S") == "mutex"


def test_rust_s_unlock_waking_a_waiter_is_not_a_wait():
    wake = rust(
        "syscall",
        "std::sys::pal::unix::futex::futex_wake",
        "<std::sys::sync::mutex::futex::Mutex>::wake",
        "tally::main::{{closure}}",
    )
    assert classify(wake, "R") == "running"
    unlock = rust("<std::sys::sync::rwlock::futex::RwLock>::read_unlock", "tally::main")
    assert classify(unlock, "R") == "running"


def test_rule_patterns_with_a_star_inside_match():
    classifier = Classifier([Rule("mutex", ("parking_lot::raw_rwlock::RawRwLock::lock_*_slow",))])
    frames = [Frame("parking_lot::raw_rwlock::RawRwLock::lock_shared_slow")]
    assert classifier.classify(frames, "S") == "mutex"
    assert classify([Frame("__pthread_rwlock_wrlock_full64")], "S") == "mutex"


def test_a_yield_is_a_sleep_unless_inside_a_lock_or_a_wait():
    assert classify(user("sched_yield", "poll_loop", "main"), "R") == "sleep"
    spin = user("sched_yield", "parking_lot::raw_mutex::RawMutex::lock_slow", "worker")
    assert classify(spin, "R") == "mutex"


# `perfsleuth flame --folded` of a wall run (wallsnap) of a Rust program whose workers
# take jobs from a crossbeam channel and fold them into a parking_lot::Mutex; both spin
# with sched_yield, then park on a futex: all of it was "sleep" or "other"
PLCOUNT_WALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "plcount-wall.folded"
INLINE_OR_KERNEL = re.compile(r"_\[[ik]\]$")


def plcount_stacks() -> list[tuple[list[Frame], float]]:
    stacks = []
    for line in PLCOUNT_WALL.read_text().splitlines():
        folded, weight = line.rsplit(" ", 1)
        names = [INLINE_OR_KERNEL.sub("", n) for n in folded.split(";")]
        stacks.append(([Frame(n) for n in reversed(names)], float(weight)))
    return stacks


def test_parking_lot_and_crossbeam_waits_are_mutex_and_condvar_waits():
    by_state: dict[str, float] = {}
    for frames, weight in plcount_stacks():
        names = " ".join(f.function for f in frames)
        state = classify(frames, "S")
        if "RawMutex::lock_slow" in names:
            assert state == "mutex", names
        elif "crossbeam_channel::context::Context::wait_until" in names or "snooze" in names:
            assert state == "condvar", names
        by_state[state] = by_state.get(state, 0.0) + weight
    assert "sleep" not in by_state
    assert by_state["mutex"] > 0 and by_state["condvar"] > 0


# `perfsleuth flame --folded` of an all-mode run of bench/fresh_waits/stdpool.rs (std
# only: workers take jobs from a std::sync::mpsc::sync_channel behind a Mutex and fold
# them into another), its stacks through the channel, a lock or an unpark
STDPOOL_ALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "stdpool-all.folded"


def test_std_channel_waits_are_channel_waits_and_a_wake_up_is_no_wait():
    """The waker's unpark matched the park rule (`<std::sys::sync::thread_parking::*`):
    main, waking a worker from send(), read as waiting in a condvar; and std's own
    channel (crossbeam's code) was no channel wait where crossbeam's is: its spinning
    and its notify inside recv() read as running, which the program times as recv."""
    for line in STDPOOL_ALL.read_text().splitlines():
        folded, _weight = line.rsplit(" ", 1)
        names = [INLINE_OR_KERNEL.sub("", n) for n in folded.split(";")]
        state = classify([Frame(n) for n in reversed(names)], "R")
        if (
            "std::sync::mpmc::Receiver<T>::recv" in names
            or "std::sync::mpmc::Sender<T>::send" in names
        ):  # the channel's own lock inside send() or recv() included: the call's wait
            assert state == "condvar", names[-4:]
        elif "<std::sys::sync::mutex::futex::Mutex>::lock_contended" in names:
            assert state == "mutex", names[-4:]
        else:
            assert state == "running", names[-4:]
    unpark = user("<std::sys::sync::thread_parking::futex::Parker>::unpark", "wake", "main")
    assert classify(unpark, "R") == "running"


# `perfsleuth flame --folded` of wall and all runs of bench/fresh_waits/futpool.cc: three
# std::async workers wait in shared_future::get() for main's std::promise; main joins them
FUTPOOL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "futpool-waits.folded"


def test_a_std_future_s_wait_is_a_condvar_wait_and_a_join_stays_other():
    """libstdc++'s futures wait in their own futex call (_M_futex_wait_until), which no
    rule named: the workers' 60% of waiting (the program's clock) read `other`, in all
    three modes."""
    states: dict[str, set[str]] = {}
    for line in FUTPOOL.read_text().splitlines():
        folded, _weight = line.rsplit(" ", 1)
        names = [INLINE_OR_KERNEL.sub("", n) for n in folded.split(";")]
        frames = [Frame(n) for n in reversed(names)]
        kind = "join" if "__pthread_clockjoin_ex" in names else "future"
        states.setdefault(kind, set()).add(classify(frames, "S"))
    assert states == {"future": {"condvar"}, "join": {"other"}}


GLIBQUEUE = Path(__file__).parent.parent / "fixtures" / "offcpu"


def glibqueue_waits(mode: str) -> dict[str, set[str]]:
    """The blocked stacks of bench/fresh_waits/glibqueue (GLib's GAsyncQueue and
    GMutex, Debian's stripped libglib 2.74) recorded in a mode, re-read by the rules:
    {what the stack waits in: states}."""
    from perfsleuth.formats import pprof

    profile = pprof.read(GLIBQUEUE / f"glibqueue-{mode}.pb.gz")
    states: dict[str, set[str]] = {}
    for stack, _weight, _count, _thread, recorded in profile.rows():
        if recorded == "running" or not stack:
            continue  # (a block without a stack: its length's were not drawn)
        frames = [profile.frames[f] for f in stack]
        names = " ".join(f.function for f in frames)
        kind = "join" if "pthread_clockjoin" in names or "futex_abstimed" in names else "glib"
        kind = "condvar" if "g_cond_wait" in names or "g_async_queue_pop" in names else kind
        states.setdefault(kind, set()).add(classify(frames, "S"))
    return states


def test_glib_s_mutex_and_condition_variable_waits_are_mutex_and_condvar():
    """GLib's GMutex and GCond are futexes of their own: every wait of the workers read
    `other` in the three modes; the GMutex's slow path is static (unnamed in Debian's
    stripped libglib) and g_mutex_lock tail-calls it: worker -> [unknown] libglib ->
    syscall. main's g_thread_join stays `other`."""
    expected = {"glib": {"mutex"}, "condvar": {"condvar"}, "join": {"other"}}
    assert glibqueue_waits("wall") == expected
    assert glibqueue_waits("offcpu") == expected


def test_an_unnamed_library_function_above_syscall_names_a_wait_blocked_or_woken():
    glib = [Frame("syscall", dso="libc.so.6"), Frame("[unknown]", dso="libglib-2.0.so.0.7400.6")]
    assert classify(glib + [Frame("worker")], "S") == "mutex"
    assert classify(glib + [Frame("worker")], "R") == "mutex"  # woken, not yet back
    # g_mutex_unlock's wake: no unnamed frame above syscall()
    assert classify([Frame("syscall", dso="libc.so.6"), Frame("worker")], "R") == "running"
    other = [Frame("syscall", dso="libc.so.6"), Frame("[unknown]", dso="libfoo.so.1")]
    assert classify(other + [Frame("worker")], "S") == "other"
    # the thread's entry is an unnamed libglib function too, but not above syscall()
    entry = [Frame("digest"), Frame("worker"), Frame("[unknown]", dso="libglib-2.0.so.0")]
    assert classify(entry, "S") == "other"


def test_cpp20_barrier_and_semaphore_waits_are_condvar_waits():
    """bench/fresh_waits/semphase (g++ 12 -std=c++20): libstdc++'s std::barrier spins
    with sched_yield, then waits in __platform_wait's own futex call: its workers' 92%
    of waiting (the program's clock) read `sleep` 70-80% and `other` the rest, in the
    three modes. main's std::thread::join stays `other`."""
    from perfsleuth.formats import pprof

    for mode in ("wall", "offcpu"):
        profile = pprof.read(GLIBQUEUE / f"semphase-{mode}.pb.gz")
        states: dict[str, set[str]] = {}
        for stack, _weight, _count, t, recorded in profile.rows():
            if recorded == "running":
                continue  # on the CPU outside a wait
            frames = [profile.frames[f] for f in stack]
            thread = profile.threads[t]
            kind = "join" if thread.tid == thread.pid else "barrier"
            states.setdefault(kind, set()).add(classify(frames, "S"))
        assert states == {"barrier": {"condvar"}, "join": {"other"}}, mode


def test_a_thread_preempted_after_its_write_returned_is_not_waiting_for_io():
    """A writer to a pipe, preempted on its way out of write() by the reader it woke
    (all mode, eBPF's switch-out): `io` 35% of the thread, and advise called it I/O
    waiting. Blocked in the write, or woken in a read, it is still `io`."""
    done = [
        Frame(n, kernel=True)
        for n in ("__schedule", "schedule", "exit_to_user_mode_loop", "do_syscall_64")
    ]
    write = user("__GI___libc_write", "write", "writer")
    assert classify(done + write, "R") == "running"
    assert classify([Frame("pipe_write", kernel=True), *write], "S") == "io"
    # no kernel stack (wall mode): a runnable writer is taken for done, a reader for
    # woken from its wait, not yet back on a CPU (the program's clock counts that)
    assert classify(write, "R") == "running"
    assert classify(write, "S") == "io"
    assert classify(user("epoll_wait", "reader"), "R") == "io"
    assert classify(user("__GI___libc_read", "read", "reader"), "R") == "io"
    lock = user("__GI___lll_lock_wait", "___pthread_mutex_lock", "consumer")
    assert classify(done + lock, "R") == "mutex"  # woken, the lock not yet taken


def test_a_thread_on_the_cpu_or_preempted_inside_a_read_is_not_waiting_for_io():
    """pzstd's reader reads its input from the page cache: all mode's perf samples of it
    copying the pages (_copy_to_iter) and eBPF's switch-outs of it preempted there
    (__cond_resched) were `io` 11-17% of the thread in offcpu and all modes, while the
    kernel's clock (schedstat) saw it blocked 0.1% outside its condition waits. Only a
    blocked switch-out is an I/O wait (the stacks as recorded, `perfsleuth flame`)."""
    syscall = [Frame(n, kernel=True) for n in ("ksys_read", "do_syscall_64")]
    read = user("__GI___libc_read", "std::fread", "pzstd::readData")
    copying = [Frame(n, kernel=True) for n in ("_copy_to_iter", "copy_page_to_iter")]
    preempted = [Frame(n, kernel=True) for n in ("__schedule", "__cond_resched")]
    page_wait = [
        Frame(n, kernel=True) for n in ("__schedule", "schedule", "io_schedule",
                                        "folio_wait_bit_common")
    ]  # fmt: skip
    filemap = [Frame(n, kernel=True) for n in ("filemap_read", "vfs_read")]
    assert classify(copying + filemap + syscall + read, "R") == "running"
    assert classify(preempted + filemap + syscall + read, "R") == "running"
    assert classify(page_wait + filemap + syscall + read, "D") == "io"
    # a reader woken from its wait is switched in from its blocked switch-out: `io`
    pipe = [Frame(n, kernel=True) for n in ("__schedule", "schedule", "pipe_read", "vfs_read")]
    assert classify(pipe + syscall + read, "S") == "io"


def test_a_thread_on_the_cpu_or_preempted_inside_a_wait_for_events_is_waiting_for_io():
    """memcached's workers wait for their sockets in libevent's epoll_wait, which a clock
    around the call counts whole: offcpu and all modes read their `io` 4.8 points under
    it (68.3% against 63.5%, load 5), their switch-outs preempted in the call and all
    mode's samples on the CPU there taken for the call's work, as a read's copy is. A
    wait for events does no I/O work: its time on the CPU counts as waiting, as a lock
    call's does."""
    syscall = [Frame(n, kernel=True) for n in ("do_epoll_wait", "__x64_sys_epoll_wait")]
    epoll = user("epoll_wait", "epoll_dispatch", "event_base_loop", "worker_libevent")
    preempted = [Frame(n, kernel=True) for n in ("__schedule", "preempt_schedule_irq")]
    sending = [Frame(n, kernel=True) for n in ("ep_send_events", "ep_poll")]
    assert classify(preempted + syscall + epoll, "R") == "io"
    assert classify(sending + syscall + epoll, "R") == "io"
    poll = user("__poll", "reader")
    assert classify([Frame("do_sys_poll", kernel=True), *poll], "R") == "io"
    # a read's copy stays the read's work
    read = user("__GI___libc_read", "conn_read")
    assert classify([Frame("_copy_to_iter", kernel=True), *read], "R") == "running"
