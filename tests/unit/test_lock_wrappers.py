"""Lock wrappers (pigz's yarn.c possess_) skipped when naming a wait's call site."""

import pytest

from perfsleuth.analyzers import Context, lock_contention, lock_wrappers
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo

MS = 1_000_000
SRC = "/src/app.c"
ROOT = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]
LOCK = [
    Frame("futex_wait", kernel=True, dso="[kernel.kallsyms]"),
    Frame("__lll_lock_wait", dso="libc.so.6"),
    Frame("___pthread_mutex_lock", dso="libc.so.6"),
]
POSSESS = Frame("possess_", dso="app", file="/src/locks.c", line=30)
TALLY = Frame("tally", dso="app", file=SRC, line=33)
JOURNAL = Frame("journal", dso="app", file=SRC, line=48)
SIZES = {"possess_": 48, "tally": 259, "journal": 321}


def profile(possess_works_ms: int = 0):
    """Two pairs of threads, each pair waiting on its own lock through possess_."""
    b = ProfileBuilder(unit="ns")
    for tid, caller in ((11, TALLY), (12, TALLY), (13, JOURNAL), (14, JOURNAL)):
        t = Thread(tid, 10, "app")
        b.add([*LOCK, POSSESS, caller, *ROOT], 400 * MS, thread=t, state="mutex")
        b.add([replace_line(caller), *ROOT], 600 * MS, thread=t, state="running")
        if possess_works_ms:
            b.add([POSSESS, caller, *ROOT], possess_works_ms * MS, thread=t, state="running")
    built = b.build()
    built.dsos = [{"path": "/opt/app/app", "build_id": ""}]
    return built


def replace_line(frame: Frame) -> Frame:
    return Frame(frame.function, dso=frame.dso, file=frame.file, line=frame.line + 5)


def findings(p) -> set[str]:
    run = RunInfo(command="app", mode="wall", meta={"cpus": 8})
    return {f.function for f in lock_contention.analyze(Context(profile=p, run=run))}


@pytest.fixture
def sizes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    found = dict(SIZES)
    monkeypatch.setattr(lock_wrappers, "function_sizes", lambda path: found)
    return found


def test_each_lock_is_named_by_the_call_through_the_wrapper(sizes):
    assert findings(profile()) == {"tally", "journal"}


def test_a_large_function_is_no_wrapper(sizes):
    sizes["possess_"] = 4096
    assert findings(profile()) == {"possess_"}


def test_a_function_that_mostly_works_itself_is_no_wrapper(sizes):
    assert findings(profile(possess_works_ms=400)) == {"possess_"}


def test_without_the_binary_the_call_site_stays_the_caller_of_the_lock():
    assert findings(profile()) == {"possess_"}


def test_cxx_names_lose_their_parameters_as_frames_name_them():
    assert lock_wrappers._without_parameters("ns::Mutex::Lock()") == "ns::Mutex::Lock"
    assert lock_wrappers._without_parameters("Q::pop(int (*)(int)) const") == "Q::pop"
    assert lock_wrappers._without_parameters("possess_") == "possess_"
