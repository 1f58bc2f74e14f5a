"""The I/O and sleep/poll wait analyzer on small hand-built wall-time profiles."""

from perfsleuth.analyzers import Context, io_and_sleep_waits
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo

MS = 1_000_000


def context(profile) -> Context:
    return Context(profile=profile, run=RunInfo(command="app", mode="all"))


def test_io_wait_and_sleep_loop_on_busy_threads():
    b = ProfileBuilder(unit="ns")
    t = Thread(31, 30, "loader")
    read = [Frame("__GI___libc_read", dso="libc.so.6"), Frame("load_chunk", dso="app")]
    sleep = [Frame("__GI___clock_nanosleep", dso="libc.so.6"), Frame("poll_jobs", dso="app")]
    b.add(read, 300 * MS, thread=t, state="io")
    b.add(sleep, 200 * MS, thread=t, state="sleep")
    b.add([Frame("parse", dso="app")], 500 * MS, thread=t, state="running")
    findings = io_and_sleep_waits.analyze(context(b.build()))
    by_rule = {f.rule: f for f in findings}
    assert set(by_rule) == {"offcpu.io-wait", "offcpu.sleep-poll"}
    assert by_rule["offcpu.io-wait"].function == "load_chunk"
    assert by_rule["offcpu.sleep-poll"].function == "poll_jobs"
    assert all(f.kind == "off-cpu" for f in findings)


def test_idle_threads_waiting_for_io_are_not_findings():
    b = ProfileBuilder(unit="ns")
    t = Thread(41, 40, "acceptor")
    b.add(
        [Frame("accept4", dso="libc.so.6"), Frame("serve", dso="app")],
        990 * MS,
        thread=t,
        state="io",
    )
    b.add([Frame("serve", dso="app")], 10 * MS, thread=t, state="running")
    assert io_and_sleep_waits.analyze(context(b.build())) == []


def test_a_main_thread_mostly_waiting_for_io_is_a_finding_whatever_its_cpu_share():
    """A program that reads 98% of its time is slow by its reads (1% on the CPU)."""
    b = ProfileBuilder(unit="ns")
    t = Thread(51, 51, "loader")
    read = [Frame("__GI___libc_read", dso="libc.so.6"), Frame("load_chunk", dso="app")]
    b.add(read, 980 * MS, thread=t, state="io")
    b.add([Frame("parse", dso="app")], 10 * MS, thread=t, state="running")
    (finding,) = io_and_sleep_waits.analyze(context(b.build()))
    assert finding.rule == "offcpu.io-wait" and finding.function == "load_chunk"


def test_a_main_thread_reading_what_another_process_makes_waits_for_that_process():
    """`git repack` reads its child pack-objects' output through a pipe 99.7% of its time
    while the child's two workers run: "take the I/O off the hot thread", gain 24.9%, was
    a false alarm. The same wait with no other process working stays a finding."""

    def parent_and_child(child_work: int) -> list:
        """A hand-built profile: the child's workers each hold CHILD_WORK units of running
        weight (a recorded share, not a measured duration)."""
        b = ProfileBuilder(unit="ns")
        parent = Thread(70, 70, "git")
        read = [Frame("read", dso="libc.so.6"), Frame("[unknown] git+0x1f100", dso="git")]
        b.add(read, 997 * MS, thread=parent, state="io")
        b.add([Frame("[unknown] git+0x2000", dso="git")], 3 * MS, thread=parent, state="running")
        for tid in (72, 73):
            worker = Thread(tid, 71, "git")
            work = [Frame("find_deltas", dso="git")]
            b.add(work, child_work * MS, thread=worker, state="running")
        return io_and_sleep_waits.analyze(context(b.build()))

    assert parent_and_child(child_work=950) == []
    (finding,) = parent_and_child(child_work=10)
    assert finding.rule == "offcpu.io-wait"


def test_waits_in_fsync_are_left_to_the_fsync_cost_class():
    b = ProfileBuilder(unit="ns")
    t = Thread(61, 61, "writer")
    sync = [Frame("fdatasync", dso="libc.so.6"), Frame("save", dso="app")]
    b.add(sync, 800 * MS, thread=t, state="io")
    b.add([Frame("encode", dso="app")], 200 * MS, thread=t, state="running")
    assert io_and_sleep_waits.analyze(context(b.build())) == []


def test_a_yield_whose_stack_stops_in_libc_is_not_called_a_poll_loop():
    """offcpu mode on a Rust program built without frame pointers: its workers spin in
    parking_lot's and crossbeam's sched_yield, and the stacks stop there; the finding
    told them to replace a sleep/poll loop."""
    b = ProfileBuilder(unit="ns")
    root = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]
    worker = Frame("plcount::main::{{closure}}", dso="plcount", file="/src/main.rs")
    for tid in (11, 12):
        t = Thread(tid, 10, "worker")
        b.add([Frame("__schedule", kernel=True), Frame("sched_yield", dso="libc.so.6")],
              700 * MS, thread=t, state="sleep")  # fmt: skip
        b.add([Frame("plcount::digest", dso="plcount"), worker, *root], 300 * MS, thread=t,
              state="running")  # fmt: skip
    (finding,) = io_and_sleep_waits.analyze(context(b.build()))
    assert "yields the CPU" in finding.title and "cannot see" in finding.title
    assert "Replace the sleep/poll loop" not in finding.suggestion
    assert "--mode wall" in finding.suggestion


def events_wait_profile(timeouts: list[list]):
    """A consumer that waits 60% of its time in epoll_wait, its stack the same whether
    it blocks or polls; meta wait_timeouts: the timeouts the run saw it pass."""
    b = ProfileBuilder(unit="ns", meta={"wait_timeouts": timeouts} if timeouts else None)
    t = Thread(71, 70, "consumer")
    wait = [Frame("epoll_wait", dso="libc.so.6"), Frame("wait_for_work", dso="app")]
    b.add(wait, 600 * MS, thread=t, state="io")
    b.add([Frame("work", dso="app")], 400 * MS, thread=t, state="running")
    return b.build()


def test_a_wait_for_events_with_no_timeout_is_no_poll_loop():
    """bench/fresh_waits/pipewait's readers block in epoll_wait(-1): the finding told
    them to replace the sleep/poll loop with a blocking wait, which it already was."""
    blocking = events_wait_profile([[71, -1, 590 * MS], [71, 5, 10 * MS]])
    assert io_and_sleep_waits.analyze(context(blocking)) == []
    long_timeout = events_wait_profile([[71, 1000, 600 * MS]])
    assert io_and_sleep_waits.analyze(context(long_timeout)) == []


def test_a_wait_for_events_with_a_short_timeout_or_none_seen_is_still_a_poll_loop():
    for timeouts in ([[71, 1, 500 * MS], [71, -1, 100 * MS]], [[99, -1, 600 * MS]], []):
        (finding,) = io_and_sleep_waits.analyze(context(events_wait_profile(timeouts)))
        assert finding.rule == "offcpu.sleep-poll" and finding.function == "wait_for_work"
