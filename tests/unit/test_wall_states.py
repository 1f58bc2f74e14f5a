"""A wall snapshot's thread state: /proc's runnable letter wins over the stack,
except inside a sleep, where no work is done (collect/wall.py)."""

from perfsleuth.collect.wall import Snapshot, TaskInfo, snapshot_state, thread_samples
from perfsleuth.formats.tool_output.eu_stack import EuFrame, EuThread
from perfsleuth.model.profile import Frame


def user(*names: str) -> list[Frame]:
    return [Frame(n, dso="libc.so.6") for n in names]


def test_a_runnable_thread_inside_usleep_was_woken_there_and_counts_as_sleeping():
    assert snapshot_state(user("clock_nanosleep", "usleep", "poller"), "R") == "sleep"


def test_a_runnable_thread_inside_write_may_be_doing_its_work():
    assert snapshot_state(user("__GI___libc_write", "writer"), "R") == "running"
    assert snapshot_state(user("fsync", "writer"), "D") == "io"


def test_a_lock_wait_after_running_is_the_snapshot_s_own_artifact():
    frames = user("__GI___lll_lock_wait", "___pthread_mutex_lock", "consumer")
    assert snapshot_state(frames, "R") == "running"
    assert snapshot_state(frames, "S") == "mutex"


def test_program_code_seen_runnable_is_running_and_seen_asleep_is_other():
    assert snapshot_state([Frame("work", dso="pollsync")], "R") == "running"
    assert snapshot_state([Frame("work", dso="pollsync")], "S") == "other"


def test_an_eu_stack_snapshot_leaves_out_a_thread_that_has_never_run():
    """The eu-stack fallback took a thread created and waiting for its first CPU for a
    running one (futpool's std::async workers on 2 busy CPUs: /proc's schedstat said 0 ns
    on a CPU, and eu-stack found no frame to unwind). None of its code has run; wallsnap
    leaves such a thread out, and offcpu and all modes time a thread from its first run.
    One whose own code shows on its stack has run since /proc was read: kept."""
    newborn = TaskInfo("worker", "R", "", ran_ns=0)
    program = EuFrame(0x401136, module="/opt/app/futpool", offset=0x1136)

    def seen(task: TaskInfo, frames: list[EuFrame]) -> list[str]:
        snap = Snapshot(1e8, [EuThread(7, 1, frames)], {7: task}, one_instant=False)
        return [s.state for s in thread_samples([snap])]

    assert seen(newborn, []) == []
    assert seen(TaskInfo("worker", "R", "", ran_ns=1500), []) == ["running"]
    assert seen(TaskInfo("worker", "R", ""), []) == ["running"]  # not known: kept
    assert len(seen(newborn, [program])) == 1
