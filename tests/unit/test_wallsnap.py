"""wallsnap's output (formats/tool_output/wallsnap.py) on a captured real run of
examples/bin/prodcons, and the snapshots wall mode makes of it."""

from pathlib import Path

from perfsleuth.collect.thread_state import classify
from perfsleuth.collect.wall import (
    Snapshot,
    TaskInfo,
    ThreadSample,
    from_wallsnap,
    kernel_frames,
    lock_holders,
    wait_timeouts,
)
from perfsleuth.formats.tool_output import wallsnap
from perfsleuth.model.profile import Frame, Thread
from perfsleuth.model.states import NOT_WAITING_READ, RUNNABLE_IN_FUTEX

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "wallsnap-prodcons.txt"


def test_snapshots_carry_their_instant_hold_pass_and_every_thread():
    snaps = wallsnap.parse(FIXTURE.read_text())
    assert [(s.time_ns, s.held_ns, s.pass_ns) for s in snaps] == [
        (60065570007701, 43376760, 9252454),
        (60065613620260, 167848, 20170),
    ]
    for snap in snaps:
        assert sorted(t.tid for t in snap.threads) == [27598, 27599, 27601, 27602]
        assert all(t.pid == 27598 for t in snap.threads)
        assert set(snap.states) == {t.tid for t in snap.threads}


def test_states_say_whether_a_thread_was_blocked_in_a_system_call():
    first = wallsnap.parse(FIXTURE.read_text())[0]
    producer = first.states[27598]  # main, joining the consumers: blocked in futex
    assert (producer.state, producer.syscall, producer.name) == ("S", 202, "prodcons")
    # in futex, not blocked there: waking a waiter, or woken and not yet back
    assert (first.states[27601].state, first.states[27601].syscall) == ("R", 202)
    assert (first.states[27602].state, first.states[27602].syscall) == ("R", None)


def test_frames_keep_module_build_id_and_offset():
    first = wallsnap.parse(FIXTURE.read_text())[0]
    consumer = next(t for t in first.threads if t.tid == 27602)
    leaf = consumer.frames[0]
    assert leaf.module == "/work/wt/wallstop/examples/bin/prodcons"
    assert leaf.build_id == "bf1e6a607a4e0e321efc2ecb9f63c955b07e1450"
    assert (leaf.address, leaf.offset) == (0x558475DE569A, 0x269A)
    assert consumer.frames[-1].module.endswith("libc.so.6")


def test_a_name_with_spaces_and_text_before_the_first_snapshot():
    text = "noise\nSNAPSHOT 10 2 1\nSTATE 7 R - my worker 1\nPID 7 - process\nTID 7:\n"
    (snap,) = wallsnap.parse(text)
    assert snap.states[7].name == "my worker 1"
    assert [t.tid for t in snap.threads] == [7]


def test_no_snapshot_at_all():
    assert wallsnap.parse("") == []
    assert from_wallsnap("wallsnap wrote nothing\n", rate_hz=50) == []


def test_a_lone_snapshot_weighs_the_interval():
    one = FIXTURE.read_text().rsplit("\nSNAPSHOT ", 1)[0] + "\n"
    assert [s.weight_ns for s in from_wallsnap(one, rate_hz=20)] == [50e6]


def test_every_snapshot_weighs_the_mean_time_between_them():
    """Poisson instants: equal weights, not the gap before each (a short gap finds the
    program disturbed by the snapshot before, and must keep its share)."""
    snaps = from_wallsnap(FIXTURE.read_text(), rate_hz=20)
    assert [s.weight_ns for s in snaps] == [60065613620260 - 60065570007701] * 2
    assert all(s.one_instant for s in snaps)
    assert [s.pass_ns for s in snaps] == [9252454, 20170]
    assert snaps[0].tasks[27598].state == "S" and snaps[0].tasks[27598].name == "prodcons"


def test_the_first_line_says_how_the_snapshotter_is_woken():
    text = "WAKE short-slice\nSNAPSHOT 10 2 1\nSTATE 7 R - w\nPID 7 - process\nTID 7:\n"
    assert wallsnap.wake(text) == "short-slice"
    assert [s.time_ns for s in wallsnap.parse(text)] == [10]
    assert wallsnap.wake(FIXTURE.read_text()) is None  # captured before it said


OWNERS = FIXTURE.with_name("wallsnap-prodcons-owners.txt")  # examples/bin/prodcons-measured


def test_owner_lines_name_the_holder_of_the_mutex_a_thread_waits_on():
    """A captured run (wallsnap PID 50 on prodcons-measured 200000): threads in a futex
    call carry the tid past the futex word; the mutex waiters' holder is a thread of
    the same snapshot, not waiting itself."""
    first, second = wallsnap.parse(OWNERS.read_text())
    owners = {tid: s.owner for tid, s in first.states.items()}
    assert owners == {32116: 32115, 32115: 0, 32114: 32115, 32112: 32115}
    assert (first.states[32115].state, first.states[32115].syscall) == ("R", None)
    assert {tid: s.owner for tid, s in second.states.items() if s.owner} == {
        32115: 32116,
        32112: 32116,
    }


def sample(snap: Snapshot, tid: int, state: str, functions: list[str]) -> ThreadSample:
    frames = [Frame(f, dso="libc.so.6" if f.startswith("_") else "app") for f in functions]
    return ThreadSample(snap, Thread(tid, 1, "t"), frames, state)


def test_lock_holders_pair_each_glibc_mutex_waiter_with_its_holder_s_stack():
    tasks = {
        2: TaskInfo("t", "S", "", owner=3),
        3: TaskInfo("t", "R", ""),
        4: TaskInfo("t", "S", "", owner=3),
    }
    snap = Snapshot(20e6, [], tasks, one_instant=True)
    waiting = ["__lll_lock_wait", "___pthread_mutex_lock", "consumer"]
    samples = [
        sample(snap, 2, "mutex", waiting),
        sample(snap, 3, "running", ["update_statistics", "consumer"]),
        # a condition variable's futex: the word past it is no owner
        sample(snap, 4, "condvar", ["__futex_abstimed_wait_common", "___pthread_cond_wait"]),
    ]
    (pair,) = lock_holders(samples)
    assert pair == [waiting, [["update_statistics", "app", ""], ["consumer", "app", ""]], 20e6]
    # a holder seen waiting on a mutex itself at the instant: the lock changed hands
    samples[1] = sample(snap, 3, "mutex", waiting)
    assert lock_holders(samples) == []


def test_a_holder_blocked_in_a_condition_wait_has_let_its_mutex_go():
    tasks = {2: TaskInfo("t", "S", "", owner=3), 3: TaskInfo("t", "S", "")}
    snap = Snapshot(20e6, [], tasks, one_instant=True)
    waiting = ["__lll_lock_wait", "___pthread_mutex_lock", "consumer"]
    waits = ["__futex_abstimed_wait_common", "___pthread_cond_wait", "consumer"]
    samples = [sample(snap, 2, "mutex", waiting), sample(snap, 3, "condvar", waits)]
    assert lock_holders(samples) == []
    # a notify under the lock (Rust's Condvar::notify_one reads as condvar) does not block
    snap.tasks[3] = TaskInfo("t", "R", "")
    notify = ["<std::sys::sync::condvar::futex::Condvar>::notify_one", "consumer"]
    samples[1] = sample(snap, 3, "condvar", notify)
    assert len(lock_holders(samples)) == 1


def test_a_thread_renamed_during_the_run_is_one_thread_under_its_last_name():
    """glibqueue's workers rename themselves (g_thread_new): a snapshot taken before
    showed the program's name, and `perfsleuth threads` listed the tid twice."""
    from perfsleuth.collect.wall import thread_samples

    first, second = FIXTURE.read_text().split("\nSNAPSHOT ", 1)
    renamed = (
        first + "\nSNAPSHOT " + second.replace("STATE 27602 R - prodcons", "STATE 27602 R - worker")
    )
    assert renamed != FIXTURE.read_text()
    names = {s.thread for s in thread_samples(from_wallsnap(renamed, rate_hz=20))}
    assert {t.name for t in names if t.tid == 27602} == {"worker"}
    assert {t.name for t in names if t.tid == 27598} == {"prodcons"}


EVENTWAIT = FIXTURE.with_name("wallsnap-eventwait-block.txt")  # examples/bin/eventwait


def test_timeout_lines_give_the_timeout_a_wait_for_events_passed():
    """Captured runs (wallsnap PID 0 on eventwait block, then poll): the consumer in
    epoll_wait with no timeout (-1; the kernel does not restart epoll_wait, so it is
    not seen blocked) and in poll() with a 1 ms one; other threads have none."""
    blocking = [s for snap in wallsnap.parse(EVENTWAIT.read_text()) for s in snap.states.values()]
    assert {(s.syscall, s.timeout_ms) for s in blocking if s.timeout_ms is not None} == {(232, -1)}
    polling = wallsnap.parse(EVENTWAIT.with_name("wallsnap-eventwait-poll.txt").read_text())
    timed = {(s.state, s.syscall, s.timeout_ms) for snap in polling for s in snap.states.values()}
    assert ("S", 7, 1) in timed
    assert {t for t in timed if t[2] is not None} == {("S", 7, 1)}


def test_wait_timeouts_add_up_the_time_each_thread_waited_for_events_by_timeout():
    tasks = {2: TaskInfo("t", "R", "", timeout_ms=-1), 3: TaskInfo("t", "S", "", timeout_ms=1)}
    snaps = [Snapshot(20e6, [], tasks, one_instant=True) for _ in range(2)]
    samples = [
        *(sample(snap, 2, "sleep", ["epoll_wait", "consumer"]) for snap in snaps),
        sample(snaps[0], 3, "io", ["__poll", "poller"]),
        sample(snaps[1], 3, "running", ["poller"]),  # back from its call: no wait
    ]
    assert sorted(wait_timeouts(samples)) == [[2, -1, 40e6], [3, 1, 20e6]]


# bench/fresh_waits/lotpipe (Rust, parking_lot's Condvar): 6 snapshots of `wallsnap PID 50`
LOTPIPE = FIXTURE.with_name("wallsnap-lotpipe.txt")


def test_a_thread_stopped_runnable_in_a_futex_call_has_it_as_its_kernel_frame():
    """A worker preempted on its way out of notify_one's futex wake (STATE R 202) is off
    the CPU, as all mode's stack through __schedule says; one blocked in a futex wait (S)
    or running its own code (R, no call) has no kernel frame."""
    marks: dict[tuple[str, int | None], set[bool]] = {}
    for snap in from_wallsnap(LOTPIPE.read_text(), 50):
        for task in snap.tasks.values():
            frames = kernel_frames(task, snap.one_instant)
            marks.setdefault((task.state, task.syscall), set()).add(
                [f.function for f in frames] == [RUNNABLE_IN_FUTEX]
            )
    assert marks[("R", 202)] == {True}
    assert marks[("S", 202)] == {False}
    assert all(marked == {False} for key, marked in marks.items() if key != ("R", 202))
    eu_stack = TaskInfo("t", "R", "futex_wait_queue", syscall=202)
    assert [f.function for f in kernel_frames(eu_stack, False)] == ["futex_wait_queue"]


# memcached 1.6.18 (bench/fresh_waits) under mcload: 4 snapshots of `wallsnap PID 50`
MEMCACHED = FIXTURE.with_name("wallsnap-memcached.txt")


def test_a_read_of_a_non_blocking_socket_is_the_read_s_work_not_a_wait():
    """memcached's workers read their non-blocking sockets after each epoll_wait: wall
    mode read them `io` (a runnable thread in a read may be in the disk), 5-10 points over
    a clock around epoll_wait. wallsnap marks a read that cannot wait (NONBLOCKING); it
    gets a kernel frame, and a runnable thread in an I/O call with one is at its work."""
    snaps = from_wallsnap(MEMCACHED.read_text(), 50)
    marked = {
        (task.state, task.syscall, task.nonblocking) for s in snaps for task in s.tasks.values()
    }
    assert ("R", 0, True) in marked
    assert all(not nonblocking for state, call, nonblocking in marked if (state, call) != ("R", 0))
    read = [Frame(n, "libc.so.6") for n in ("__GI___libc_read", "tcp_read", "drive_machine")]
    for snap in snaps:
        for task in snap.tasks.values():
            frames = kernel_frames(task, snap.one_instant)
            if task.nonblocking:
                assert [f.function for f in frames] == [NOT_WAITING_READ]
                assert classify(frames + read, task.state) == "running"
    # a read of a blocking socket, or of a file, may be a wait (woken, not yet back; in
    # the disk): still `io`
    assert classify(kernel_frames(TaskInfo("t", "R", "", syscall=0), True) + read, "R") == "io"
