"""The fleet store on a folder: append, dedupe, atomicity, queries, compaction, retention,
rollups. Real pyarrow and DuckDB; windows from a small generator of realistic stacks."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tmpfs import fill, small_disk

from perfsleuth.errors import UserError
from perfsleuth.fleet import queries
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread, merge
from perfsleuth.present.folded import lines
from perfsleuth.store.fleet import FleetStore, fleet_root
from perfsleuth.store.fleet.filesystem import TMP_MAX_AGE_S, Files
from perfsleuth.views.top import top

T0 = 1_700_000_000.0 - 1_700_000_000.0 % 3600  # an hour boundary
RATE = 19.0
FUNCTIONS = [
    ("main", "app"),
    ("serve", "app"),
    ("parse", "app"),
    ("malloc", "libc.so.6"),
    ("free", "libc.so.6"),
    ("inflate", "libz.so.1"),
    ("memcpy", "libc.so.6"),
    ("json_dump", "app"),
    ("hash", "app"),
    ("write", "[kernel]"),
]


def stack_pool(seed: int = 1, size: int = 60) -> list[list[Frame]]:
    """Call stacks leaf first, every one rooted at main."""
    rng = random.Random(seed)
    pool = []
    for _ in range(size):
        depth = rng.randint(1, 6)
        chain = [Frame("main", "app", "main.c", 10)]
        chain += [
            Frame(f, d, f"{f}.c", rng.randint(1, 3) * 10)
            for f, d in rng.sample(FUNCTIONS[1:], depth)
        ]
        pool.append(list(reversed(chain)))
    return pool


def make_window(
    i: int,
    start: float,
    host: str,
    service: str,
    pool: list[list[Frame]],
    samples: int = 190,
    seed: int = 0,
    **labels: str,
) -> Window:
    rng = random.Random(seed * 7919 + i)
    builder = ProfileBuilder()
    for _ in range(samples):
        stack = pool[min(int(rng.paretovariate(1.2)) - 1, len(pool) - 1)]
        pid = rng.choice([100, 200])
        builder.add(stack, 1.0, thread=Thread(pid + rng.randint(0, 3), pid, f"{service}-{pid}"))
    return Window(
        id=f"{host}-{i}",
        start=start,
        end=start + 10,
        profile=builder.build(),
        labels={"host": host, "service": service, **labels},
        processes={100: Process("/usr/bin/app", "b100"), 200: Process("/usr/bin/other", "b200")},
        rate_hz=RATE,
    )


def fleet(n_per_host: int = 12, hosts: int = 3, spacing: float = 10.0) -> list[Window]:
    pool = stack_pool()
    return [
        make_window(
            i,
            T0 + i * spacing,
            f"web-{h}",
            "api" if h < 2 else "db",
            pool,
            seed=h,
            version=f"1.{h}",
        )
        for h in range(hosts)
        for i in range(n_per_host)
    ]


def as_ns(window: Window) -> Profile:
    """A window's profile in the store's unit: each row's CPU ns, rounded as stored."""
    p = window.profile
    out = ProfileBuilder(unit="ns")
    for stack, w, c, t, _s in p.rows():
        out.add(
            [p.frames[f] for f in stack],
            round(window.cpu_ns(w, c)),
            count=c,
            thread=p.threads[t] if t >= 0 else None,
        )
    return out.build()


def expected_top(windows: list[Window], **kw) -> list[dict]:
    return top(merge([as_ns(w) for w in windows]), n=0, **kw)["rows"]


def fleet_top(store: FleetStore, start=T0, end=T0 + 7200, **kw) -> dict:
    return queries.top(store, start, end, n=0, **kw)


@pytest.fixture
def store(tmp_path: Path) -> FleetStore:
    return FleetStore(str(tmp_path / "fleet"))


def test_append_stores_once_and_dedupes(store: FleetStore) -> None:
    windows = fleet(4, 2)
    assert all(store.append(w) for w in windows)
    assert not any(store.append(w) for w in windows)
    doc = fleet_top(store)
    assert doc["unit"] == "ns"
    assert doc["samples"] == sum(w.profile.num_samples for w in windows)
    assert doc["total"] == sum(as_ns(w).total for w in windows)


def test_windows_appended_from_many_threads_at_once_land_once(store: FleetStore) -> None:
    """Concurrent appends are written as groups: each window once, every answer right."""
    windows = fleet(10, 3)
    pushes = windows + windows[::2]  # every other window pushed twice, concurrently
    random.Random(3).shuffle(pushes)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(store.append, pushes))
    assert sum(answers) == len(windows)
    assert fleet_top(store)["rows"] == expected_top(windows)
    assert not any(store.append(w) for w in windows)


def test_fleet_top_equals_the_sum_of_window_tops_exactly(store: FleetStore) -> None:
    windows = fleet()
    for w in windows:
        store.append(w)
    for by in ("function", "line", "file", "dso"):
        assert fleet_top(store, by=by)["rows"] == expected_top(windows, by=by)
    assert fleet_top(store, sort="total")["rows"] == expected_top(windows, sort="total")


def test_flame_folded_root_first(store: FleetStore) -> None:
    windows = fleet(3, 2)
    for w in windows:
        store.append(w)
    folded = lines(queries.flame(store, T0, T0 + 3600))
    assert folded == lines(merge([as_ns(w) for w in windows]))
    assert all(line.startswith("main") for line in folded)


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ("service=api", lambda w: w.labels["service"] == "api"),
        ("host=~web-[02]", lambda w: w.labels["host"] in ("web-0", "web-2")),
        ("service=api,host!=web-0", lambda w: w.labels["host"] == "web-1"),
        ("version=1.2", lambda w: w.labels["version"] == "1.2"),
        ("version!~1\\.[01]", lambda w: w.labels["version"] == "1.2"),
        ("nosuchlabel=x", lambda w: False),
        ("host=~web-[0-9]{1,3}", lambda w: True),  # a comma inside a regex
        ("host=~web-[0-9]{2,3}", lambda w: False),
        ("host=~web-[0-9]{1,3}, service=api", lambda w: w.labels["service"] == "api"),
    ],
)
def test_where_filters(store: FleetStore, where, keep) -> None:
    windows = fleet(3)
    for w in windows:
        store.append(w)
    kept = [w for w in windows if keep(w)]
    assert fleet_top(store, where=where)["rows"] == (expected_top(kept) if kept else [])


def test_where_filters_per_sample_labels(store: FleetStore) -> None:
    windows = fleet(2, 1)
    for w in windows:
        store.append(w)
    api = fleet_top(store, where="pid=100")["total"] + fleet_top(store, where="pid=200")["total"]
    assert api == fleet_top(store)["total"]
    exe = fleet_top(store, where="exe=/usr/bin/app,build_id=b100,comm=api-100")
    assert exe["total"] == fleet_top(store, where="pid=100")["total"] > 0


def test_bad_where_is_a_user_error(store: FleetStore) -> None:
    store.append(fleet(1, 1)[0])
    for where in ("service", "9x=1", "host=~(", "a b=c"):
        with pytest.raises(UserError):
            fleet_top(store, where=where)


def test_time_range_selects_windows_by_start(store: FleetStore) -> None:
    windows = fleet(12, 1, spacing=600)  # two hours
    for w in windows:
        store.append(w)
    inside = [w for w in windows if T0 + 1200 <= w.start < T0 + 4800]
    assert fleet_top(store, T0 + 1200, T0 + 4800)["rows"] == expected_top(inside)


def count_files(root: Path, table: str) -> int:
    return sum(1 for _ in (root / table).rglob("*.parquet"))


def test_compaction_keeps_answers_and_lowers_file_count(store: FleetStore, tmp_path) -> None:
    windows = fleet(12, 3, spacing=400)
    for w in windows[: len(windows) // 2]:
        store.append(w)
    store.compact()
    for w in windows[len(windows) // 2 :]:
        store.append(w)  # new raw files beside a compacted one
    before = {by: fleet_top(store, by=by) for by in ("function", "line")}
    folded = lines(queries.flame(store, T0, T0 + 7200))
    files_before = sum(count_files(tmp_path / "fleet", t) for t in ("samples", "stacks", "frames"))
    done = store.compact()
    assert done.files_after < done.files_before
    files_after = sum(
        count_files(tmp_path / "fleet", t) for t in ("samples/level=raw", "stacks", "frames")
    )
    assert files_after < files_before
    assert {by: fleet_top(store, by=by) for by in before} == before
    assert lines(queries.flame(store, T0, T0 + 7200)) == folded
    assert not any(store.append(w) for w in windows)  # dedupe survives compaction
    assert fleet_top(store) == before["function"]


def test_readers_skip_files_a_crashed_compaction_left(store: FleetStore, tmp_path) -> None:
    windows = fleet(6, 2)
    for w in windows:
        store.append(w)
    raw = next((tmp_path / "fleet" / "samples" / "level=raw").rglob("hour=*"))
    originals = {p.name: p.read_bytes() for p in raw.glob("w-*.parquet")}
    store.compact()
    for name, data in originals.items():  # as if the compactor died before deleting
        (raw / name).write_bytes(data)
    assert fleet_top(store)["rows"] == expected_top(windows)
    store.compact()
    assert [p.name[:2] for p in raw.iterdir()] == ["c-"]


def test_rollups_agree_with_raw(store: FleetStore, tmp_path) -> None:
    windows = fleet(40, 2, spacing=170)  # about two hours, windows at odd seconds
    for w in windows:
        store.append(w)
    raw_answers = {
        rng: fleet_top(store, *rng, where=where)
        for rng in ((T0, T0 + 7200), (T0 + 600, T0 + 4200), (T0, T0 + 3600))
        for where in ("service=api",)
    }
    store.compact()
    levels = {}
    for (start, end), doc in raw_answers.items():
        got = fleet_top(store, start, end, where="service=api")
        assert got["total"] == doc["total"] and got["samples"] == doc["samples"]
        for a, b in zip(got["rows"], doc["rows"], strict=True):
            assert a["function"] == b["function"]
            assert a["self"] == pytest.approx(b["self"], abs=1e-12)
            assert a["total"] == pytest.approx(b["total"], abs=1e-12)
        levels[(start, end)] = store.select(start, end).levels
    assert levels[(T0, T0 + 7200)] == {"hour": 2}
    assert levels[(T0 + 600, T0 + 4200)] == {"minute": 2}


def test_expire_drops_old_partitions_only(store: FleetStore, tmp_path) -> None:
    windows = fleet(6, 1, spacing=1800)  # three hours
    for w in windows:
        store.append(w)
    store.compact()
    dropped = store.expire(T0 + 3600)
    assert dropped == [p for p in dropped if "hour=" in p] and len(dropped) == 1
    kept = [w for w in windows if w.start >= T0 + 3600]
    assert fleet_top(store, T0, T0 + 4 * 3600)["rows"] == expected_top(kept)
    assert store.expire(T0 + 86400 * 3) and not list((tmp_path / "fleet" / "stacks").iterdir())


def test_a_failed_write_leaves_a_readable_store_and_the_retry_lands_once(
    store: FleetStore, monkeypatch
) -> None:
    windows = fleet(3, 1)
    store.append(windows[0])
    real_put, real_create = Files.put, Files.create
    for fail_at in range(1, 5):  # frames, stacks, samples (created if absent), marker
        calls = []

        def failing(real, calls=calls, fail_at=fail_at):
            def write(self, rel, data):
                calls.append(rel)
                if len(calls) == fail_at:
                    raise OSError(28, "No space left on device")
                return real(self, rel, data)

            return write

        monkeypatch.setattr(Files, "put", failing(real_put))
        monkeypatch.setattr(Files, "create", failing(real_create))
        with pytest.raises(UserError):
            store.append(windows[1])
        monkeypatch.setattr(Files, "put", real_put)
        monkeypatch.setattr(Files, "create", real_create)
        assert fleet_top(store)["rows"] == expected_top(windows[: 1 + (fail_at == 4)])
        store.append(windows[1])
        assert fleet_top(store)["rows"] == expected_top(windows[:2])
        store.expire(T0 + 86400)  # start over
        store.append(windows[0])


def test_a_write_the_full_disk_refuses_leaves_no_temporary_file(tmp_path: Path) -> None:
    windows = fleet(3, 1)
    with small_disk(tmp_path / "disk", "1m") as disk:
        store = FleetStore(str(disk / "fleet"))
        store.append(windows[0])
        ballast = fill(disk)
        with pytest.raises(UserError, match="No space left on device"):
            store.append(windows[1])
        assert list((disk / "fleet" / "_tmp").iterdir()) == []
        ballast.unlink()
        assert store.append(windows[1])
        assert fleet_top(store)["rows"] == expected_top(windows[:2])


def test_opening_the_store_clears_old_leftover_temporary_files_only(tmp_path: Path) -> None:
    """What a killed writer left goes; a young file may be a writer still at work."""
    leftovers = tmp_path / "fleet" / "_tmp"
    leftovers.mkdir(parents=True)
    (leftovers / "killed").write_bytes(b"half a file")
    an_hour_and_more = time.time() - TMP_MAX_AGE_S - 60
    os.utime(leftovers / "killed", (an_hour_and_more, an_hour_and_more))
    (leftovers / "writing").write_bytes(b"a file being written")
    FleetStore(str(tmp_path / "fleet"))
    assert [p.name for p in leftovers.iterdir()] == ["writing"]


CRASH = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from unit.test_fleet_store import fleet
    from perfsleuth.store.fleet import FleetStore
    from perfsleuth.store.fleet.filesystem import Files
    real = Files.create
    def create(self, rel, data):
        if rel.startswith("samples/"):
            os.kill(os.getpid(), signal.SIGKILL)  # dies between dictionaries and samples
        return real(self, rel, data)
    Files.create = create
    FleetStore(sys.argv[1]).append(fleet(1, 1)[0])
    """
)


def test_killed_mid_append_then_retried_lands_exactly_once(tmp_path: Path) -> None:
    root = str(tmp_path / "fleet")
    code = CRASH.format(tests=str(Path(__file__).parents[1]))
    proc = subprocess.run([sys.executable, "-c", code, root], timeout=60)
    assert proc.returncode == -9
    store = FleetStore(root)
    window = fleet(1, 1)[0]
    assert fleet_top(store)["rows"] == []
    assert store.append(window)
    assert not store.append(window)
    assert fleet_top(store)["rows"] == expected_top([window])


def test_status_lists_hosts_and_sizes(store: FleetStore) -> None:
    for w in fleet(3, 2):
        store.append(w)
    store.put_host_status("web-1", {"windows_dropped": 2, "lost_samples": 5})
    store.put_host_status("../../etc/passwd", {"x": 1})
    doc = store.status()
    json.dumps(doc)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert hosts["web-1"]["metrics"] == {"windows_dropped": 2, "lost_samples": 5}
    assert (hosts["web-1"]["windows_dropped"], hosts["web-1"]["lost_samples"]) == (2, 5)
    assert hosts["web-0"]["windows"] == 3 and hosts["web-0"]["samples"] == 3 * 190
    assert hosts["web-0"]["samples_per_s"] == pytest.approx(570 / 30)
    assert doc["oldest"] == doc["newest"] == T0 and doc["bytes"] > 0 and doc["files"] > 0
    assert "../../etc/passwd" in hosts


def test_status_says_what_the_store_costs_and_what_compaction_saves(store: FleetStore) -> None:
    windows = fleet(3, 2)
    for w in windows[:4]:
        store.append(w)  # one at a time: groups of one
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(store.append, windows[4:]))
    cost = store.status()["cost"]
    assert cost["objects"] == store.status()["files"]
    assert cost["windows_last_hour"] == 6
    # 3 requests a window, 2 a group: 4 groups of one, then one or two groups
    assert 3 * 6 + 2 * 4 + 2 <= cost["requests_per_hour"] <= 3 * 6 + 2 * 6
    # a samples file per window, a stacks and a frames file per group
    assert 6 + 2 * 5 <= cost["query_objects"] <= 6 + 2 * 6
    assert cost["query_objects_after_compaction"] == 1 + 2
    saved = cost["objects"] - cost["objects_after_compaction"]
    store.compact()
    after = store.status()["cost"]
    lease = 2  # the lease file and, on a folder, the file its flock holds
    assert after["objects"] == after["objects_after_compaction"] == cost["objects"] - saved + lease
    assert after["query_objects"] == after["query_objects_after_compaction"] == 3


def test_fleet_root_of_store_options(tmp_path: Path) -> None:
    assert fleet_root(".perfsleuth") == ".perfsleuth/fleet"
    assert fleet_root("s3://b/p") == "s3://b/p"
    assert fleet_root(str(tmp_path / "f")) == str(tmp_path / "f")
    (tmp_path / "runs.duckdb").write_bytes(b"")
    assert fleet_root(str(tmp_path)) == str(tmp_path / "fleet")


def test_queries_on_a_missing_store_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no fleet store"):
        fleet_top(FleetStore(str(tmp_path / "none")))
    assert not (tmp_path / "none").exists()
