"""A wall snapshot's thread state: /proc's runnable letter wins over the stack,
except inside a sleep, where no work is done (collect/wall.py)."""

from perfsleuth.collect.wall import snapshot_state
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
