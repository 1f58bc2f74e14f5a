"""--mode all: off-CPU stacks cut short in libc are completed from on-CPU ones."""

from pathlib import Path

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


def test_a_frame_named_by_its_function_s_start_is_no_name_to_complete_a_cut_stack_by():
    # off-CPU frames of stripped libraries are named as perf's are, "[unknown] DSO+0xSTART"
    # (stripped libstdc++'s thread routine under prodcons's consumers): taken for a name,
    # the consumers' cut lock waits were completed by that frame, and their lock site read
    # "threads running consumer, in clone3" instead of prodcons.cc:121
    oncpu = ProfileBuilder(unit="ns")
    t = Thread(11, 10, "consumer")
    lock_path = [Frame("__GI___lll_lock_wait", dso="libc.so.6")]
    routine = Frame("[unknown] libstdc++.so.6.0.30+0xd4490", dso="libstdc++.so.6.0.30")
    oncpu.add([*lock_path, LOCK_CALL, routine, *ROOT], 1, count=3, thread=t)
    completions = Completions(oncpu.build())
    cut = [Frame("futex_wait", kernel=True), *lock_path, routine]
    ((completed, share),) = completions.complete(11, cut)
    assert share == 1.0 and LOCK_CALL in completed and completed[-1].function == "clone3"


def test_a_stripped_library_s_function_is_named_by_its_start_as_perf_s_frames_are():
    # all mode on pbzip2 1.1.13: its compressors, preempted in Debian's libbz2 (stripped),
    # had off-CPU frames "[unknown]" where perf's on-CPU frames of the same function were
    # "[unknown] libbz2.so.1.0.4+0x3080": one function, two names in every view
    from perfsleuth.collect.offcpu import _named_by_start
    from perfsleuth.symbols import Symbolizer

    libbz2 = "/usr/lib/x86_64-linux-gnu/libbz2.so.1.0.4"
    symbolizer = Symbolizer()
    places = [(libbz2, 0x30A0), (libbz2, 0x3080)]
    names = _named_by_start(
        symbolizer.symbolize_offsets([(p, "", o) for p, o in places]), symbolizer
    )
    assert {names[p][-1].function for p in places} == {"[unknown] libbz2.so.1.0.4+0x3080"}


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


def test_a_leaf_wrapper_s_caller_is_put_back_from_its_return_address():
    # offcpu mode: a Rust worker yields inside parking_lot's lock; libc's sched_yield
    # keeps no frame, and the frame-pointer walk found nothing past it ("sleep")
    from perfsleuth.collect import thread_state
    from perfsleuth.collect.offcpu import _frames

    libc, program = ("/usr/lib/x86_64-linux-gnu/libc.so.6", 0xE4C81), ("/bin/plcount", 0x2F5A1)
    names = {
        libc: (Frame("sched_yield", dso="libc.so.6"),),
        program: (
            Frame("parking_lot_core::thread_parker::imp::thread_yield", dso="plcount"),
            Frame("parking_lot::raw_mutex::RawMutex::lock_slow", dso="plcount"),
        ),
    }
    frames = _frames([libc], program, names)
    assert [f.function for f in frames][0] == "sched_yield" and len(frames) == 3
    assert thread_state.classify(frames, "R") == "mutex"
    assert _frames([libc, program], program, names) == frames  # the walk found it: kept once
    names[libc] = (Frame("__futex_abstimed_wait_common", dso="libc.so.6"),)
    assert len(_frames([libc], program, names)) == 1  # not a leaf wrapper: [sp] is no return


# `perfsleuth flame --folded --state mutex --thread WRITER` of an all-mode run of pigz 2.6
# -p 3 (-O2 -g) on 300 MB: its writer thread waits in yarn.c's wait_for_ and, woken by a
# compressor's twist_ (which broadcasts under the lock), retakes the mutex inside
# pthread_cond_wait (__pthread_mutex_cond_lock); the program's own clock: 0.05% of the
# writer's time in lock calls, 99.6% in condition waits. The stack eBPF took stops in
# glibc's __lll_lock_wait; the completed stack shows the condition wait.
FIXTURES = Path(__file__).parent.parent / "fixtures" / "offcpu"
PIGZ_WRITER_ALL = FIXTURES / "pigz-writer-all-mutex.folded"


def folded_stacks(path: Path) -> list[tuple[list[Frame], float]]:
    """(frames leaf first, weight) of each line of `perfsleuth flame --folded`."""
    stacks = []
    for line in path.read_text().splitlines():
        folded, weight = line.rsplit(" ", 1)
        names = folded.split(";")
        frames = [Frame(n[:-4], kernel=n.endswith("_[k]")) if n.endswith(("_[k]", "_[i]"))
                  else Frame(n, dso="libc.so.6") for n in reversed(names)]  # fmt: skip
        stacks.append((frames, float(weight)))
    return stacks


def on_cpu(folded: Path, thread: Thread) -> ProfileBuilder:
    """The captured all-mode stacks' user frames as the thread's on-CPU samples."""
    oncpu = ProfileBuilder(unit="ns")
    for frames, _weight in folded_stacks(folded):
        oncpu.add([f for f in frames if not f.kernel], 1e6, count=1, thread=thread)
    return oncpu


def test_a_cut_lock_wait_is_the_condition_wait_s_relock_when_its_completed_stack_says_so():
    from perfsleuth.collect.offcpu import _merged

    t = Thread(23566, 23504, "pigz")
    oncpu, offcpu = on_cpu(PIGZ_WRITER_ALL, t), ProfileBuilder(unit="ns")
    relock, _ = next(s for s in folded_stacks(PIGZ_WRITER_ALL) if "__lll_lock_wait" in str(s))
    cut = relock[: 1 + next(i for i, f in enumerate(relock) if f.function == "__lll_lock_wait")]
    offcpu.add(cut, 5e6, count=1, thread=t, state="mutex")
    merged = _merged(oncpu.build(), offcpu.build())
    by_state: dict[str, set[str]] = {}
    for stack, _weight, count, _t, state in merged.rows():
        if count and any(merged.frames[f].kernel for f in stack):
            names = {merged.frames[f].function for f in stack}
            by_state.setdefault(state, set()).update(names & {"__pthread_mutex_cond_lock"})
    assert by_state == {"condvar": {"__pthread_mutex_cond_lock"}}, by_state


def test_glibc_s_lock_helper_s_caller_is_put_back_and_tells_a_condition_wait_s_relock():
    # offcpu mode, pigz 2.6's writer (the run of PIGZ_WRITER_ALL): Debian's glibc 2.36
    # keeps no frame in __lll_lock_wait (it calls the futex straight away), so the walk
    # stopped there: a condition wait's relock and a pthread_mutex_lock were both `mutex`
    # (27% of the writer, whose clock counts 0.05% of lock calls). The word at its stack
    # pointer is its caller's return address; names as perfsleuth symbolizes the offsets
    from perfsleuth.collect import thread_state
    from perfsleuth.collect.offcpu import _frames

    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    leaf, relock, lock = (libc, 0x8612B), (libc, 0x8B6DE), (libc, 0x8C480)
    names = {
        leaf: (Frame("futex_wait", dso="libc.so.6"), Frame("__lll_lock_wait", dso="libc.so.6")),
        relock: (Frame("__pthread_mutex_cond_lock", dso="libc.so.6"),),
        lock: (Frame("lll_mutex_lock_optimized", dso="libc.so.6"),
               Frame("___pthread_mutex_lock", dso="libc.so.6")),
    }  # fmt: skip
    kernel = [Frame("__schedule", kernel=True), Frame("futex_wait", kernel=True)]
    in_relock = _frames([leaf], relock, names)
    assert in_relock[-1].function == "__pthread_mutex_cond_lock"
    assert thread_state.classify(kernel + in_relock, "S") == "condvar"
    assert thread_state.classify(kernel + _frames([leaf], lock, names), "S") == "mutex"


# `perfsleuth flame --folded --thread MAIN` of an all-mode run of pbzip2 1.1.13 -p3
# (-O2 -g) on 120 MB: its main thread waits in producer()'s pthread_cond_wait, and at
# the end joins its threads (pthread_join: 3.4% of it in wall mode, its clock's 3.7% of
# time outside condition waits), which perf never sampled on the CPU; the join's eBPF
# stack stops in glibc's futex helper, labelled `other` by its shared futex, and was
# completed with the condition wait's on-CPU path: main read condvar +2.0 to +4.6 points
# over its clock
PBZIP2_MAIN_ALL = FIXTURES / "pbzip2-main-all.folded"


def test_a_cut_wait_whose_futex_says_join_is_not_completed_as_a_condition_wait():
    from perfsleuth.collect.offcpu import _merged

    t = Thread(26452, 26452, "pbzip2")
    oncpu, offcpu = on_cpu(PBZIP2_MAIN_ALL, t), ProfileBuilder(unit="ns")
    cond, _ = next(s for s in folded_stacks(PBZIP2_MAIN_ALL) if "safe_cond_wait" in str(s))
    helper = next(i for i, f in enumerate(cond) if f.function == "__futex_abstimed_wait_common")
    cut = [Frame("__schedule", kernel=True), Frame("futex_wait", kernel=True), *cond[: helper + 1]]
    offcpu.add(cut, 5e6, count=1, thread=t, state="other")  # a shared futex: a join
    offcpu.add(cut, 7e6, count=1, thread=t, state="condvar")  # a private one
    merged = _merged(oncpu.build(), offcpu.build())
    blocked: dict[str, float] = {}
    for stack, weight, _count, _t, state in merged.rows():
        if any(merged.frames[f].kernel for f in stack):
            blocked[state] = blocked.get(state, 0.0) + weight
    assert blocked == {"other": 5e6, "condvar": 7e6}, blocked


def test_a_stripped_program_s_threads_are_of_the_kind_of_their_own_outermost_function():
    # Debian's pzstd 1.5.4 (stripped), all mode: a ThreadPool of std::threads, every frame
    # of the program named by its start. Its reader had the kind `fread` (the outermost
    # real name, libc's) and its compressors none, so the reader's cut condition waits
    # were completed from nothing; a symbolized build's threads are all of the pool's
    # kind (its lambda's _M_run), as these are of its start
    routine = Frame("[unknown] libstdc++.so.6.0.30+0xd4490", dso="libstdc++.so.6.0.30")
    pool = Frame("[unknown] pzstd+0x12f50", dso="pzstd")
    wait = [Frame("__futex_abstimed_wait_common", dso="libc.so.6")]
    pop = [
        *wait,
        Frame("pthread_cond_wait", dso="libc.so.6"),
        Frame("[unknown] pzstd+0xd060", dso="pzstd"),
    ]
    syscall = Frame("entry_SYSCALL_64_after_hwframe", dso="[kernel.kallsyms]", kernel=True)
    reading = [syscall, Frame("read", dso="libc.so.6"), Frame("fread", dso="libc.so.6")]
    oncpu = ProfileBuilder(unit="ns")
    reader, compressor = Thread(11, 10, "pzstd"), Thread(12, 10, "pzstd")
    oncpu.add([*reading, Frame("[unknown] pzstd+0xa510", dso="pzstd"), pool, routine, *ROOT], 1,
              count=4, thread=reader)  # fmt: skip
    oncpu.add([*pop, pool, routine, *ROOT], 1, count=2, thread=compressor)
    completions = Completions(oncpu.build())
    assert completions.kinds() == {11: pool.function, 12: pool.function}
    cut = [Frame("futex_wait", kernel=True), *wait]
    ((completed, share),) = completions.complete(11, cut)
    assert share == 1.0 and pop[-1] in completed and completed[-1].function == "clone3"
