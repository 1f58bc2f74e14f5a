"""--mode all: off-CPU stacks cut short in libc are completed from on-CPU ones."""

from perfsleuth.collect.offcpu import Completions
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread

LOCK_CALL = Frame("consumer(Queue&)", dso="app", file="/src/queue.cc", line=31)
ROOT = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]


def test_all_mode_completes_cut_ebpf_stacks_from_oncpu_stacks():
    oncpu = ProfileBuilder(unit="ns")
    t = Thread(11, 10, "consumer")
    lock_path = [
        Frame("__GI___lll_lock_wait", dso="libc.so.6"),
        Frame("___pthread_mutex_lock", dso="libc.so.6"),
    ]
    oncpu.add([*lock_path, LOCK_CALL, *ROOT], 1, count=3, thread=t)
    oncpu.add([*lock_path, Frame("other_site", dso="app"), *ROOT], 1, count=1, thread=t)
    completions = Completions(oncpu.build())
    cut = [Frame("futex_wait", kernel=True), lock_path[0], Frame("[unknown]", dso="libstdc++.so.6")]
    completed = completions.complete(11, cut)
    assert sorted(share for _, share in completed) == [0.25, 0.75]
    best = max(completed, key=lambda c: c[1])[0]
    assert best[:2] == cut[:2] and LOCK_CALL in best and best[-1].function == "clone3"
    whole = [lock_path[0], LOCK_CALL, *ROOT]
    assert completions.complete(11, whole) == [(whole, 1.0)]
    assert completions.complete(99, cut) == [(cut, 1.0)]  # another thread: nothing to go by


def test_threads_of_the_same_kind_lend_their_stacks_but_main_does_not_borrow():
    oncpu = ProfileBuilder(unit="ns")
    wait = [Frame("__futex_abstimed_wait_common", dso="libc.so.6")]
    cond = [*wait, Frame("pthread_cond_wait", dso="libc.so.6"), LOCK_CALL, *ROOT]
    oncpu.add(cond, 1, count=2, thread=Thread(11, 10, "consumer"))
    oncpu.add(
        [Frame("work", dso="app"), LOCK_CALL, *ROOT], 1, count=5, thread=Thread(12, 10, "consumer")
    )
    main_root = [Frame("main", dso="app"), Frame("_start", dso="app")]
    oncpu.add([Frame("produce", dso="app"), *main_root], 1, count=5, thread=Thread(10, 10, "main"))
    completions = Completions(oncpu.build())
    cut = [Frame("futex_wait", kernel=True), *wait]
    ((other_consumer, share),) = completions.complete(12, cut)
    assert share == 1.0 and LOCK_CALL in other_consumer
    assert completions.complete(10, cut) == [(cut, 1.0)]


def test_a_cut_yield_is_relabelled_by_the_lock_its_completed_stack_spins_in():
    # --mode all on a Rust program whose workers spin on a parking_lot mutex: the
    # off-CPU stack stops in libc's sched_yield ("sleep"); perf's DWARF stack of the
    # same call shows the lock's slow path
    from perfsleuth.collect.offcpu import _merged

    t = Thread(11, 10, "worker0")
    rust_root = [Frame("plcount::main::{{closure}}", dso="plcount"), *ROOT]
    yield_ = Frame("sched_yield", dso="libc.so.6")
    oncpu = ProfileBuilder(unit="ns")
    spin = [yield_, Frame("parking_lot::raw_mutex::RawMutex::lock_slow", dso="plcount")]
    oncpu.add([*spin, *rust_root], 1e6, count=1, thread=t, state="mutex")
    offcpu = ProfileBuilder(unit="ns")
    offcpu.add([Frame("__schedule", kernel=True), yield_], 5e6, count=1, thread=t, state="sleep")
    merged = _merged(oncpu.build(), offcpu.build())
    assert {state for _stack, _weight, _count, _t, state in merged.rows()} == {"mutex"}


def test_a_private_futex_wait_is_a_rwlock_s_when_its_completed_stack_shows_one():
    # --mode all on a C++ program whose threads share a std::shared_mutex: the off-CPU
    # stack stops in glibc's futex helper, private futex, taken for a condition
    # variable's; perf's DWARF stack of the same call is pthread_rwlock_rdlock's
    from perfsleuth.collect.offcpu import _merged

    t = Thread(11, 10, "rwtable")
    helper = Frame("__futex_abstimed_wait_common", dso="libc.so.6")
    call = Frame("main::{lambda()#1}::operator()() const", dso="rwtable", file="/src/rw.cc")
    oncpu = ProfileBuilder(unit="ns")
    rdlock = [helper, Frame("___pthread_rwlock_rdlock", dso="libc.so.6"), call, *ROOT]
    oncpu.add(rdlock, 1e6, count=1, thread=t, state="mutex")
    offcpu = ProfileBuilder(unit="ns")
    offcpu.add([Frame("futex_wait", kernel=True), helper], 5e6, count=1, thread=t, state="condvar")
    merged = _merged(oncpu.build(), offcpu.build())
    assert {state for _stack, _weight, _count, _t, state in merged.rows()} == {"mutex"}
