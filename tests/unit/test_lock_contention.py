"""The lock-contention analyzer on small hand-built wall-time profiles."""

import json
from dataclasses import replace
from pathlib import Path

from perfsleuth.analyzers import Context, lock_contention
from perfsleuth.analyzers.wait_sites import call_site, is_library
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo

MS = 1_000_000
SRC = "/src/queue.cc"
CONSUMER = Frame("consumer(Queue&)", dso="app", file=SRC, line=40)
LOCK_CALL = Frame("consumer(Queue&)", dso="app", file=SRC, line=31)
PROCESS = Frame("process(Message const&)", dso="app", file=SRC, line=12)
STATS = Frame("update_stats(Message const&)", dso="app", file=SRC, line=20)
ROOT = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]
MUTEX_WAIT = [
    Frame("futex_wait", kernel=True, dso="[kernel.kallsyms]"),
    Frame("__GI___lll_lock_wait", dso="libc.so.6"),
    Frame("___pthread_mutex_lock", dso="libc.so.6"),
    Frame("std::mutex::lock()", dso="app", file="/usr/include/c++/12/bits/std_mutex.h"),
]
CV_WAIT = [
    Frame("__futex_abstimed_wait_common", dso="libc.so.6"),
    Frame("___pthread_cond_wait", dso="libc.so.6"),
    Frame("std::condition_variable::wait(std::unique_lock<std::mutex>&)", dso="libstdc++.so.6"),
]


def context(profile, cpus: int = 8) -> Context:
    return Context(profile=profile, run=RunInfo(command="app", mode="all", meta={"cpus": cpus}))


JOIN = [
    Frame("__futex_abstimed_wait_common", dso="libc.so.6"),
    Frame("pthread_join", dso="libc.so.6"),
]


def consumers_profile(
    mutex_ms: int = 200, cv_ms: int = 100, run_ms: int = 700, main_works: bool = True
):
    """Two consumers waiting at one lock; main produces (runs) the whole second, or
    only joins them (main_works=False)."""
    b = ProfileBuilder(unit="ns")
    for tid in (11, 12):
        t = Thread(tid, 10, "consumer")
        b.add([*MUTEX_WAIT, LOCK_CALL, *ROOT], mutex_ms * MS, thread=t, state="mutex")
        b.add([*CV_WAIT, LOCK_CALL, *ROOT], cv_ms * MS, thread=t, state="condvar")
        b.add([PROCESS, CONSUMER, *ROOT], (run_ms - 100) * MS, thread=t, state="running")
        b.add([STATS, CONSUMER, *ROOT], 100 * MS, thread=t, state="running")
    main = [Frame("main", dso="app"), *ROOT]
    if main_works:
        b.add(main, 1000 * MS, thread=Thread(10, 10, "main"), state="running")
    else:
        b.add([*JOIN, *main], 1000 * MS, thread=Thread(10, 10, "main"), state="sleep")
    return b.build()


def test_lock_wait_is_attributed_to_the_program_call_site():
    (finding,) = lock_contention.analyze(context(consumers_profile(main_works=False)))
    assert finding.kind == "lock-contention"
    assert finding.function == "consumer(Queue&)"
    assert (finding.file, finding.line) == (SRC, 31)
    # both consumers wait 300 of their 1000 ms, and main only joins them: the program
    # would end 300 ms sooner
    assert abs(finding.estimated_gain - 0.3) < 1e-9
    assert abs(finding.details["waiters_fraction"] - 0.3) < 1e-9
    assert finding.gain_low < finding.estimated_gain <= finding.gain_high
    assert "critical path" in finding.gain_basis
    assert finding.details["states"] == {"mutex": 2 / 3, "condvar": 1 / 3}


def test_waits_off_the_critical_path_save_nothing():
    """The producer runs the whole second: the consumers' waits do not hold the program
    back (a lock-free queue measured 1.008x on such a hand-off), whatever they sum to."""
    (finding,) = lock_contention.analyze(context(consumers_profile()))
    assert abs(finding.details["waiters_fraction"] - 0.3) < 1e-9
    assert finding.estimated_gain == 0.0
    assert any("last to finish (main:10)" in e for e in finding.evidence)


def test_the_thread_that_waits_least_bounds_the_gain():
    b = ProfileBuilder(unit="ns")
    for tid, wait_ms in ((61, 300), (62, 100)):
        t = Thread(tid, 60, "worker")
        b.add([*MUTEX_WAIT, LOCK_CALL, *ROOT], wait_ms * MS, thread=t, state="mutex")
        b.add([PROCESS, CONSUMER, *ROOT], (1000 - wait_ms) * MS, thread=t, state="running")
    (finding,) = lock_contention.analyze(context(b.build()))
    assert abs(finding.estimated_gain - 0.1) < 1e-9  # worker 62 still needs 900 of 1000 ms
    assert finding.estimated_gain < finding.details["waiters_fraction"]


def test_busy_cpus_leave_nothing_to_gain():
    """Two consumers and a producer on one CPU: the waits give the CPU to the others,
    and without them the program still needs its 2.4 CPU-seconds."""
    (finding,) = lock_contention.analyze(context(consumers_profile(main_works=False), cpus=1))
    assert finding.estimated_gain == 0.0 and finding.details["waiters_fraction"] > 0.2
    assert any("CPU time alone still needs 1.40 s of the 1 CPU(s)" in e for e in finding.evidence)


def test_handoff_suggests_a_lock_free_queue_and_claims_no_code_under_the_lock():
    """Without the holders of the waits (all and offcpu modes), what the waiting function
    runs is listed, process() outside the lock among it: named as such, not as the code
    under the lock."""
    (finding,) = lock_contention.analyze(context(consumers_profile()))
    assert "moodycamel" in finding.suggestion
    assert finding.fix["package"] == "libconcurrentqueue-dev"
    holders = [h["function"] for h in finding.details["holders"]]
    assert holders[:2] == ["process(Message const&)", "update_stats(Message const&)"]
    assert finding.details["holders_under_the_lock"] is False
    (said,) = [e for e in finding.evidence if "under the lock" in e]
    assert said.startswith("meanwhile consumer(Queue&) runs: process(Message const&) 86%")
    assert "which code runs under the lock this run cannot tell" in said


def test_a_wall_run_that_saw_no_holder_says_so_and_sends_nobody_to_wall_mode():
    """plzip's main thread waits on its courier's condition variable: a wall run reads
    holders (meta lock_holders) but has none there; it used to say `record --mode
    wall` reads them, to a wall run."""
    profile = consumers_profile()
    profile.meta["lock_holders"] = []
    (finding,) = lock_contention.analyze(context(profile))
    (said,) = [e for e in finding.evidence if "under the lock" in e]
    assert "no holder of these waits was seen" in said and "--mode wall" not in said
    assert finding.details["holders_under_the_lock"] is False


def test_the_holders_seen_at_the_waits_are_the_code_under_the_lock():
    """Wall mode's lock_holders: what the holder of each waited-on mutex ran at the
    instant; process(), which the consumers run outside the lock, is not named."""
    profile = consumers_profile()
    waiter = [f.function for f in [*MUTEX_WAIT, LOCK_CALL, *ROOT]]
    holder = [[f.function, f.dso, f.file] for f in [STATS, CONSUMER, *ROOT]]
    in_malloc = [["malloc", "libc.so.6", ""], *holder[1:]]
    profile.meta["lock_holders"] = [[waiter, holder, 300 * MS], [waiter, in_malloc, 100 * MS]]
    (finding,) = lock_contention.analyze(context(profile))
    assert finding.details["holders"] == [
        {"function": "update_stats(Message const&)", "share": 0.75},
        {"function": "consumer(Queue&)", "share": 0.25},  # malloc is a library's
    ]
    assert finding.details["holders_under_the_lock"] is True
    assert "under the lock, its holder runs: update_stats(Message const&) 75%" in "".join(
        finding.evidence
    )
    assert not any("process(" in e for e in finding.evidence)


def test_small_waits_and_cpu_profiles_give_nothing():
    assert lock_contention.analyze(context(consumers_profile(mutex_ms=5, cv_ms=5))) == []
    cpu = consumers_profile()
    cpu.unit = "samples"
    assert lock_contention.analyze(context(cpu)) == []


def test_truncated_stacks_fall_back_to_the_thread_function():
    b = ProfileBuilder(unit="ns")
    t = Thread(21, 20, "worker")
    truncated = [MUTEX_WAIT[0], MUTEX_WAIT[1], Frame("[unknown]", dso="libstdc++.so.6")]
    b.add(truncated, 400 * MS, thread=t, state="mutex")
    for _ in range(5):
        b.add([PROCESS, CONSUMER, *ROOT], 120 * MS, thread=t, state="running")
    b.add([STATS, CONSUMER, *ROOT], 400 * MS, thread=Thread(22, 20, "holder"), state="running")
    (finding,) = lock_contention.analyze(context(b.build()))
    assert finding.function == "consumer(Queue&)"
    assert "threads running consumer(Queue&)" in finding.title
    assert finding.confidence < 0.7


def test_threads_whose_stacks_all_stop_short_are_one_site_per_thread_name():
    """sysbench's mutex test (Debian's, stripped) in offcpu mode: eBPF's frame-pointer
    stacks stop one frame into the program, so each worker's "entry" was whichever of
    sb_rand_uniform (run before the lock) and the loop's own function got more of its
    few samples, and one lock was two findings, one named sb_rand_uniform. Threads with
    no stack that reaches their root take their name's entry, voted over all of them."""
    lock_wait = [MUTEX_WAIT[0], Frame("pthread_mutex_lock", dso="libc.so.6")]
    rand = Frame("sb_rand_uniform", dso="sysbench")
    loop = Frame("[unknown] sysbench+0x1ba30", dso="sysbench")
    b = ProfileBuilder(unit="ns")
    for tid, (in_rand, in_loop) in {61: (3, 2), 62: (3, 2), 63: (1, 4), 64: (1, 4)}.items():
        t = Thread(tid, 60, "sysbench")
        b.add(lock_wait, 600 * MS, thread=t, state="mutex")
        for frame, n in ((rand, in_rand), (loop, in_loop)):
            for _ in range(n):
                b.add([frame], 80 * MS, thread=t, state="running")
    (finding,) = lock_contention.analyze(context(b.build(), cpus=2))
    assert finding.function == loop.function
    assert all(f"sysbench:{tid}" in "".join(finding.evidence) for tid in (61, 62, 63, 64))


def test_idle_workers_waiting_for_work_are_not_contention():
    """A pool's workers blocked in pthread_cond_wait wait for jobs, not for a lock."""
    b = ProfileBuilder(unit="ns")
    for tid in (31, 32, 33, 34):
        t = Thread(tid, 30, "worker")
        b.add([*CV_WAIT, LOCK_CALL, *ROOT], 800 * MS, thread=t, state="condvar")
        b.add([PROCESS, CONSUMER, *ROOT], 200 * MS, thread=t, state="running")
    b.add([Frame("main", dso="app"), *ROOT], 1000 * MS, thread=Thread(30, 30), state="running")
    assert lock_contention.analyze(context(b.build())) == []


def test_a_single_thread_has_no_contention():
    b = ProfileBuilder(unit="ns")
    t = Thread(41, 41, "app")
    b.add([*MUTEX_WAIT, LOCK_CALL, *ROOT], 400 * MS, thread=t, state="mutex")
    b.add([PROCESS, CONSUMER, *ROOT], 600 * MS, thread=t, state="running")
    assert lock_contention.analyze(context(b.build())) == []


def test_a_c_program_is_not_told_to_use_a_cpp_queue():
    c_wait = [Frame("futex_wait", kernel=True), Frame("__GI___lll_lock_wait", dso="libc.so.6")]
    cv = [Frame("___pthread_cond_wait", dso="libc.so.6")]
    call = Frame("consume", dso="app", file="/src/q.c", line=9)
    b = ProfileBuilder(unit="ns")
    for tid in (51, 52):
        t = Thread(tid, 50, "consumer")
        b.add([*c_wait, call, *ROOT], 300 * MS, thread=t, state="mutex")
        b.add([*cv, call, *ROOT], 100 * MS, thread=t, state="condvar")
        b.add([Frame("work", dso="app", file="/src/q.c", line=3), *ROOT], 600 * MS, thread=t,
              state="running")  # fmt: skip
    b.add([Frame("main", dso="app"), *ROOT], 1000 * MS, thread=Thread(50, 50), state="running")
    (finding,) = lock_contention.analyze(context(b.build()))
    assert "moodycamel" not in finding.suggestion and not finding.fix


def test_a_rust_lock_s_call_site_is_the_program_s_code_not_std_s():
    """std is linked into a Rust program; <std::...>::method frames (an inherent impl's
    method) were taken for the program's own, and the lock's site was std's
    lock_contended."""
    names = (
        "syscall",
        "std::sys::pal::unix::futex::futex_wait",
        "<std::sys::sync::mutex::futex::Mutex>::lock_contended",
        "<std::sys::sync::mutex::futex::Mutex>::lock",
        "std::sync::poison::mutex::Mutex<T>::lock",
        "tally::main::{{closure}}",
        "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold",
    )
    frames = [Frame(n, dso="libc.so.6" if n == "syscall" else "tally") for n in names]
    assert call_site(frames).function == "tally::main::{{closure}}"


def test_a_parking_lot_lock_s_call_site_is_the_program_s_code_not_the_crate_s():
    """A Rust program's crates are built into it: parking_lot's spinning and parking
    frames (from a wall run of a program folding jobs into a parking_lot::Mutex) were
    taken for the program's own, and the one lock was two findings, at
    parking_lot_core's thread_yield and futex_wait."""
    registry = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    core = registry + "parking_lot_core-0.9.12/src/"
    lock_slow = Frame(
        "parking_lot::raw_mutex::RawMutex::lock_slow",
        dso="plcount",
        file=registry + "parking_lot-0.12.5/src/raw_mutex.rs",
        line=256,
    )
    lock = Frame(
        "lock_api::mutex::Mutex<R,T>::lock",
        dso="plcount",
        file=registry + "lock_api-0.4.14/src/mutex.rs",
        line=213,
    )
    site = Frame("plcount::main::{{closure}}", dso="plcount", file="/src/main.rs", line=50)
    spin = [
        Frame("sched_yield", dso="libc.so.6"),
        Frame("parking_lot_core::thread_parker::imp::thread_yield", dso="plcount",
              file=core + "thread_parker/linux.rs", line=155),
        lock_slow, lock, site,
    ]  # fmt: skip
    park = [
        Frame("syscall", dso="libc.so.6"),
        Frame("parking_lot_core::thread_parker::imp::ThreadParker::futex_wait", dso="plcount",
              file=core + "thread_parker/linux.rs", line=112),
        lock_slow, lock, site,
    ]  # fmt: skip
    assert call_site(spin) == site and call_site(park) == site
    recv = [
        Frame("syscall", dso="libc.so.6"),
        Frame("crossbeam_channel::channel::Receiver<T>::recv", dso="plcount",
              file=registry + "crossbeam-channel-0.5.15/src/channel.rs", line=790),
        replace(site, line=45),
    ]  # fmt: skip
    b = ProfileBuilder(unit="ns")
    for tid in (11, 12):
        t = Thread(tid, 10, "worker")
        b.add([*recv, *ROOT], 50 * MS, thread=t, state="condvar")
        b.add([*spin, *ROOT], 200 * MS, thread=t, state="mutex")
        b.add([*park, *ROOT], 200 * MS, thread=t, state="mutex")
        b.add([site, *ROOT], 600 * MS, thread=t, state="running")
    (finding,) = lock_contention.analyze(context(b.build()))
    assert (finding.function, finding.line) == ("plcount::main::{{closure}}", 50)
    assert "moodycamel" not in finding.suggestion  # a Rust program: std:: is Rust's
    (said,) = [e for e in finding.evidence if "under the lock" in e]
    assert "--mode wall` reads" not in said and "no mode can tell" in said


def test_holders_read_at_a_mutex_are_not_said_of_a_rwlock_waited_at_the_same_site():
    """rwtable's threads wait at one function on a std::shared_mutex (a pthread rwlock:
    no owner word) and on a std::mutex: the holders wall mode read are the mutex's, and
    the finding said `under the lock, its holder runs` of all its waits."""
    profile = consumers_profile(cv_ms=0)
    shared = Frame("std::unique_lock<std::shared_mutex>::unique_lock(std::shared_mutex&)",
                   dso="app", file="/usr/include/c++/12/bits/unique_lock.h")  # fmt: skip
    rwlock = [
        Frame("__futex_abstimed_wait_common", dso="libc.so.6"),
        Frame("___pthread_rwlock_wrlock", dso="libc.so.6"),
        shared,
    ]
    b = ProfileBuilder(unit="ns")
    for stack, weight, _count, t, state in profile.rows():
        b.add([profile.frames[f] for f in stack], weight, thread=profile.threads[t], state=state)
    for tid in (11, 12):
        b.add([*rwlock, LOCK_CALL, *ROOT], 200 * MS, thread=Thread(tid, 10, "consumer"),
              state="mutex")  # fmt: skip
    both = b.build()
    waiter = [f.function for f in [*MUTEX_WAIT, LOCK_CALL, *ROOT]]
    holder = [[f.function, f.dso, f.file] for f in [STATS, CONSUMER, *ROOT]]
    both.meta["lock_holders"] = [[waiter, holder, 300 * MS]]
    (finding,) = lock_contention.analyze(context(both))
    (said,) = [e for e in finding.evidence if "holder" in e]
    assert said.startswith("under the glibc mutex, its holder runs: update_stats")
    assert "50% of the waits here are on locks whose holder is not read" in said
    assert "std::unique_lock<std::shared_mutex>" in said


SQLWRITERS_HOLDERS = (
    Path(__file__).parent.parent / "fixtures" / "wall" / "sqlwriters-lock-holders.json"
)


def test_the_code_under_the_lock_is_named_past_a_stripped_library_s_static_functions():
    """bench/fresh_waits/sqlwriters.c's threads wait on SQLite's connection mutex
    (Debian's libsqlite3, stripped) while its holder commits: wall mode's real holders
    (the 12 heaviest) end in its static functions, "[unknown] libsqlite3.so.0.8.6
    +0xaa310", which the finding named as the code under the lock (35%, 12%, 7%); the
    first named frame is SQLite's commit, sqlite3PagerCommitPhaseOne."""
    holders = json.loads(SQLWRITERS_HOLDERS.read_text())
    b = ProfileBuilder(unit="ns")
    waits = [Frame(f, dso="libc.so.6") for f in holders[0][0][:4]]
    caller = Frame("writer", dso="sqlwriters", file="/tmp/fw/sqlwriters.c", line=56)
    for tid in (11, 12, 13):
        t = Thread(tid, 10, "sqlwriters")
        b.add([*waits, caller, *ROOT], 600 * MS, thread=t, state="mutex")
        hashing = [Frame("hash_rows", dso="sqlwriters"), caller, *ROOT]
        b.add(hashing, 400 * MS, thread=t, state="running")
    profile = b.build()
    profile.meta["lock_holders"] = holders
    (finding,) = lock_contention.analyze(context(profile, cpus=2))
    names = [h["function"] for h in finding.details["holders"]]
    assert names[0] == "sqlite3PagerCommitPhaseOne"
    assert not any(n.startswith("[unknown]") for n in names)


# `perfsleuth flame --folded --state mutex` of a wall run of sqlwriters.c linked with
# -static (glibc and SQLite inside the program: every frame's DSO is the program's)
STATIC_MUTEX = Path(__file__).parent.parent / "fixtures" / "wall" / "sqlwriters-static-mutex.folded"


def test_a_static_program_s_lock_is_its_own_call_site_not_libc_s_lock_wait():
    """In a static program __lll_lock_wait and __clone3 are in the program's DSO: the
    finding named __lll_lock_wait as the program's call site (and, stacks cut, __clone3
    as every thread's function), not writer at sqlwriters.c:56 as wall mode names it
    when libc is a shared library."""
    sites = []
    for line in STATIC_MUTEX.read_text().splitlines():
        folded, _weight = line.rsplit(" ", 1)
        frames = [Frame(n, dso="sqlwriters-static") for n in reversed(folded.split(";"))]
        sites.append(call_site(frames).function)
    assert sites == ["writer", "sqlite3LockAndPrepare"]  # SQLite's own lock call, as shared
    assert all(is_library(Frame(n, dso="app")) for n in ("__clone3", "start_thread", "_start"))


GLIBQUEUE_WALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "glibqueue-wall.pb.gz"


def test_a_stripped_library_s_static_lock_slow_path_is_not_the_program_s_call_site():
    """g_mutex_lock tail-calls GLib's static GMutex slow path: the finding was named
    `[unknown] libglib-2.0.so.0.7400.6+0xa8970` (the program's code, by its name), not
    worker at glibqueue.c:45 where the program takes the lock."""
    from perfsleuth.formats import pprof

    profile = pprof.read(GLIBQUEUE_WALL)
    (finding,) = lock_contention.analyze(context(profile, cpus=2))
    assert (finding.function, finding.line) == ("worker", 45)
    glib = Frame("[unknown] libglib-2.0.so.0.7400.6+0xa8970", dso="libglib-2.0.so.0.7400.6")
    assert is_library(glib)
    assert not is_library(Frame("[unknown] glibqueue+0x1240", dso="glibqueue"))


def test_a_site_nearly_all_in_condition_waits_is_no_contention():
    """zstd -T4's main thread, waiting for its jobs in ZSTDMT_flushProduced: 98% in
    pthread_cond_wait, 2% retaking the condition's mutex. Wall mode reported lock
    contention there ("shorten the critical section"), gain 1.9%."""
    assert lock_contention.analyze(context(consumers_profile(mutex_ms=40, cv_ms=260)))
    assert not lock_contention.analyze(context(consumers_profile(mutex_ms=6, cv_ms=294)))


# wall mode's lock_holders of pigz 2.6 -p 3 (-O2 -g) on 300 MB: its compressors wait in
# possess_(write_first) at pigz.c:1890 while the holder, another compressor, is in
# yarn.c's twist_, waking the writer (pthread_cond_broadcast) before it unlocks
PIGZ_HOLDERS = Path(__file__).parent.parent / "fixtures" / "wall" / "pigz-holders.json"


def test_a_holder_waking_waiters_in_a_lock_wrapper_is_named_by_that_call():
    """The finding said "under the lock, its holder runs: twist_ 100%": yarn.c's wrapper
    that sets the value, broadcasts and unlocks. What runs under the lock is the wake-up."""
    holders = json.loads(PIGZ_HOLDERS.read_text())
    b = ProfileBuilder(unit="ns")
    waits = [Frame(f, dso="libc.so.6") for f in holders[0][0][:5]]
    caller = Frame("compress_thread", dso="pigz", file="/tmp/pigz-2.6/pigz.c", line=1890)
    for tid in (11, 12, 13):
        t = Thread(tid, 10, "pigz")
        b.add([*waits, Frame("possess_", dso="pigz"), caller, *ROOT], 200 * MS, thread=t,
              state="mutex")  # fmt: skip
        b.add([Frame("deflate", dso="libz.so.1"), caller, *ROOT], 800 * MS, thread=t,
              state="running")  # fmt: skip
    profile = b.build()
    profile.meta["lock_holders"] = holders
    (finding,) = lock_contention.analyze(context(profile, cpus=8))
    assert [h["function"] for h in finding.details["holders"]] == [
        "pthread_cond_broadcast in twist_"
    ]
    assert finding.suggestion.startswith("Signal or broadcast after unlocking")
