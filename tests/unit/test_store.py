import multiprocessing
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import Recording, RunInfo, StoredDocument
from perfsleuth.model.timeline import Timeline
from perfsleuth.store.run_index import is_run_reference
from perfsleuth.store.runs import Store


def sample_profile(weight: float = 1.0):
    b = ProfileBuilder(unit="ns", meta={"event": "cpu-clock"})
    b.add(
        [Frame("f", "prog", "f.c", 3, inlined=True), Frame("main", "prog")],
        weight,
        thread=Thread(7, 7, "prog"),
        state="running",
    )
    b.add([Frame("g", "[kernel.kallsyms]", kernel=True)], 2 * weight)
    return b.build()


def test_round_trip(store_path: Path):
    store = Store(store_path)
    profile = sample_profile()
    profile.dsos = [{"path": "/bin/prog", "build_id": "abcd"}]
    recording = Recording(profile, exit_status=3, duration_s=1.5)
    run_id = store.add_run(RunInfo(command="prog --x", mode="cpu"), recording).id
    assert run_id == 1
    loaded = store.load(run_id)
    original = sample_profile()
    assert loaded.frames == original.frames
    assert loaded.stacks == original.stacks
    assert loaded.threads == original.threads
    assert sorted(loaded.sample_weight) == sorted(original.sample_weight)
    assert loaded.unit == "ns"
    assert loaded.meta["event"] == "cpu-clock"
    got = store.run_info(run_id)
    assert (got.command, got.exit_status, got.duration_s) == ("prog --x", 3, 1.5)
    assert got.dsos == [{"path": "/bin/prog", "build_id": "abcd"}]


def test_resolve_latest_and_back(store_path: Path):
    store = Store(store_path)
    for _ in range(3):
        store.add_run(RunInfo(), Recording(sample_profile()))
    assert store.resolve("latest") == 3
    assert store.resolve("latest~2") == 1
    assert store.resolve("2") == 2
    with pytest.raises(UserError):
        store.resolve("latest~3")
    with pytest.raises(UserError):
        store.resolve("9")
    for not_a_number in ("²", "latest~²", "٣"):
        with pytest.raises(UserError):
            store.resolve(not_a_number)
    assert [r.id for r in store.runs()] == [3, 2, 1]


def test_load_refs_reads_each_run_named(store_path: Path):
    store = Store(store_path)
    for command in ("a", "b", "c"):
        store.add_run(RunInfo(command=command), Recording(sample_profile()))
    runs = store.load_refs("1", "latest", "latest~1")
    assert [(r.id, r.info.command) for r in runs] == [(1, "a"), (3, "c"), (2, "b")]
    with pytest.raises(UserError):
        store.load_refs("1", "9")


def test_one_run_reference_grammar():
    """The store, the server and gate's --baseline read references the same way."""
    for ref in ("1", "42", "latest", "latest~0", "latest~12"):
        assert is_run_reference(ref), ref
    for ref in ("", "²", "٣", "latest~", "latest~²", "latest~-1", "-1", "1.0", "latest1", "x"):
        assert not is_run_reference(ref), ref


def test_missing_store_is_a_user_error(store_path: Path):
    with pytest.raises(UserError, match="no runs stored"):
        Store(store_path).runs()


def test_failed_write_leaves_no_partial_run(store_path: Path):
    store = Store(store_path)
    store.add_run(RunInfo(), Recording(sample_profile()))
    bad = sample_profile()
    bad.sample_weight.append(1.0)  # columns of unequal length: the insert fails
    with pytest.raises(ValueError):  # pyarrow.ArrowInvalid
        store.add_run(RunInfo(), Recording(bad))
    assert [r.id for r in store.runs()] == [1]
    assert store.resolve("latest") == 1


def test_a_value_the_store_cannot_hold_fails_the_write_after_rows_were_appended(store_path: Path):
    """The appender has taken the rows before the bad one when it refuses it: the
    transaction's rollback drops them too."""
    store = Store(store_path)
    store.add_run(RunInfo(), Recording(sample_profile()))
    bad = sample_profile()
    bad.frames.append(Frame("huge", "prog", "h.c", 2**40))  # frames.line is INTEGER
    with pytest.raises(Exception, match="out of range"):
        store.add_run(RunInfo(), Recording(bad))
    assert [r.id for r in store.runs()] == [1]
    assert len(store.load(1).frames) == len(sample_profile().frames)
    store.add_run(RunInfo(), Recording(sample_profile()))
    assert [len(store.load(i).frames) for i in (1, 2)] == [len(bad.frames) - 1] * 2


def test_documents_replace(store_path: Path):
    store = Store(store_path)
    run_id = store.add_run(RunInfo(), Recording(sample_profile())).id
    store.put_document(run_id, "findings", "all", [{"a": 1}])
    store.put_document(run_id, "findings", "all", [{"a": 2}])
    assert store.documents(run_id, "findings") == {"all": [{"a": 2}]}


def _writer(path: str, n: int) -> None:
    store = Store(path)
    for _ in range(n):
        store.add_run(RunInfo(command="concurrent"), Recording(sample_profile()))


def test_concurrent_writers_all_succeed(store_path: Path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(store_path), 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    runs = Store(store_path).runs()
    assert sorted(r.id for r in runs) == list(range(1, 16))
    assert all(Store(store_path).load(r.id).total == 3.0 for r in runs)


def test_documents_written_with_the_run(store_path: Path):
    store = Store(store_path)
    documents = [StoredDocument("notes", "callgrind", {"total": 5})]
    run_id = store.add_run(RunInfo(), Recording(sample_profile(), documents=documents)).id
    assert store.documents(run_id, "notes") == {"callgrind": {"total": 5}}


def test_load_run_is_one_value_with_the_profiles_timeline(store_path: Path):
    store = Store(store_path)
    profile = sample_profile()
    timeline = Timeline()
    timeline.add(stack=0, thread=0, count=2, time_ns=100)
    timeline.add(stack=1, thread=-1, count=1, time_ns=250)
    profile.timeline = timeline
    run_id = store.add_run(RunInfo(command="prog", mode="cpu"), Recording(profile)).id
    run = store.load_run(run_id)
    assert run.info.command == "prog" and run.counts is None and run.cache == {}
    assert run.profile.timeline is not None
    assert list(run.profile.timeline.count) == [2, 1]
    assert list(run.profile.timeline.time_ns) == [100, 250]
    assert run.profile.frames == sample_profile().frames


def test_a_writer_runs_duckdb_on_one_thread_and_a_reader_on_its_default(store_path: Path):
    import duckdb

    store = Store(store_path)
    store.add_run(RunInfo(command="prog", mode="cpu"), Recording(sample_profile()))

    def threads(con) -> int:
        return int(con.execute("SELECT current_setting('threads')").fetchone()[0])

    with store._connect(write=True) as con:
        assert threads(con) == 1
    with store._connect(write=False) as con, duckdb.connect(":memory:") as default:
        assert threads(con) == threads(default)
    assert store.load(1).frames == sample_profile().frames


def test_a_read_waits_for_a_write_connection_of_this_process(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`serve` advises a run on a thread while its pages read the store: DuckDB opens a
    file with one configuration at a time in a process, so a read meeting the write
    connection waits for it (it failed as 'the store ... is unreadable'). The writer lets
    go when the reader first backs off, so the read meets it for sure."""
    import threading

    from perfsleuth.store import runs

    store = Store(store_path)
    store.add_run(RunInfo(command="prog", mode="cpu"), Recording(sample_profile()))
    writing, release = threading.Event(), threading.Event()
    backed_off = []
    pause = runs.time.sleep

    def back_off(seconds: float) -> None:
        backed_off.append(seconds)
        release.set()
        pause(seconds)

    def write() -> None:
        with store._connect(write=True):
            writing.set()
            release.wait()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writing.wait()
    monkeypatch.setattr(runs.time, "sleep", back_off)
    try:
        assert [r.command for r in Store(store_path).runs()] == ["prog"]
    finally:
        release.set()
        writer.join()
    assert backed_off, "the read never met the write connection"
