"""Thread states from stacks: the rules in collect/thread_state.py."""

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


def test_condvar_relocking_its_mutex_is_a_mutex_wait():
    frames = KERNEL_FUTEX + user("__GI___lll_lock_wait", "__pthread_cond_wait_common")
    assert classify(frames, "S") == "mutex"


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
