"""The fleet store on a real S3 server (SeaweedFS on 127.0.0.1, tests/s3server.py): the
same answers as on a folder, conditional writes, and many writers at once — collectors,
compactions and retention on one bucket, killed with -9 — counting every acknowledged
push exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from integration.test_collector import NOW, TOKEN, folded_query, start, stop
from s3server import S3Server, s3_server, s3_url  # noqa: F401 -- fixtures
from unit.test_fleet_store import T0, fleet, fleet_top, make_window, stack_pool

from perfsleuth.errors import UserError
from perfsleuth.fleet import queries
from perfsleuth.formats.wire import window_pprof
from perfsleuth.present.folded import lines
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.fleet.filesystem import open_root

pytestmark = pytest.mark.integration
PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
RAW_ERRORS = ("Traceback", "AWS Error", "botocore", "An error occurred (")


@pytest.mark.timeout(180)
def test_s3_gives_the_same_answers_as_a_folder(s3_url: str, tmp_path) -> None:  # noqa: F811
    windows = fleet(8, 2, spacing=1000)
    s3, local = FleetStore(s3_url), FleetStore(str(tmp_path / "fleet"))
    for w in windows:
        assert s3.append(w) and local.append(w)
    assert not s3.append(windows[0])

    def answers(store: FleetStore) -> tuple:
        return (
            fleet_top(store),
            fleet_top(store, where="host=~web-1", by="line"),
            lines(queries.flame(store, T0, T0 + 7200)),
        )

    expected = answers(local)
    assert answers(s3) == expected
    s3.compact()
    local.compact()
    assert answers(s3) == expected
    assert s3.select(T0, T0 + 7200).levels == {"hour": 2}
    assert not any(s3.append(w) for w in windows)  # deduplication survives compaction
    s3.put_host_status("web-0", {"lost_samples": 1})
    status = s3.status()
    assert {h["host"] for h in status["hosts"]} == {"web-0", "web-1"}
    assert status["files"] > 0 and status["bytes"] > 0
    assert status["cost"]["objects"] == status["files"]
    assert status["cost"]["query_objects"] == status["cost"]["query_objects_after_compaction"]
    assert s3.expire(T0 + 3600) == ["dt=2023-11-14/hour=22"]
    assert fleet_top(s3)["total"] < expected[0]["total"]


def test_conditional_writes_are_a_compare_and_swap(s3_url: str) -> None:  # noqa: F811
    files = open_root(s3_url)
    tag = files.create("lock", b"first")
    assert tag is not None and files.create("lock", b"second") is None
    current = files.read_versioned("lock")
    assert current is not None and (current.data, current.tag) == (b"first", tag)
    assert 0 <= current.age_s < 600  # by the server's clock
    newer = files.replace("lock", b"third", tag)
    assert newer is not None and files.replace("lock", b"fourth", tag) is None
    assert files.get("lock") == b"third"


@pytest.mark.timeout(180)
def test_the_collector_takes_the_s3_endpoint_option(s3_url: str, monkeypatch) -> None:  # noqa: F811
    """`collector --endpoint URL` as `fleet --endpoint URL`: no $AWS_ENDPOINT_URL needed."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    running = start(s3_url, "--endpoint", endpoint, "--token", TOKEN)  # type: ignore[arg-type]
    try:
        body = b"main;handle;parse 30\nmain;handle;write 10\n"
        status, answer = running.post("/ingest", body, folded_query("shop", "web-1"))
    finally:
        err = stop(running)
    assert status == 200 and json.loads(answer)["stored"] is True, err
    store = FleetStore(s3_url, endpoint)
    assert "web-1" in {h["host"] for h in store.status()["hosts"]}
    assert queries.top(store, NOW - 3600, NOW + 60, "service=shop")["total"] == 40 * 1e9 / 100


# -- many writers at once ---------------------------------------------------------


class Pushes:
    """Windows pushed to a set of collectors until each is acknowledged (200), as an
    agent does: a refused or unanswered push is retried, on the next collector."""

    def __init__(self, collectors: list, windows: list) -> None:
        self.collectors = collectors
        self.windows = windows
        self.acknowledged: dict[str, int] = {}
        self.sent = 0  # samples of every window whose push began
        self.lock = threading.Lock()

    def run(self, offset: int, stride: int) -> None:
        for n, window in enumerate(self.windows[offset::stride]):
            body, query = window_pprof.encode(window), window_pprof.query(window)
            with self.lock:
                self.sent += window.profile.num_samples
            headers = {"X-Perfsleuth-Window": window.id}
            for attempt in range(200):
                running = self.collectors[(n + attempt) % len(self.collectors)]
                try:
                    status, answer = running.post("/ingest", body, query, headers)
                except OSError:  # killed meanwhile
                    status = 0
                if status == 200:
                    with self.lock:
                        self.acknowledged[window.id] = window.profile.num_samples
                    break
                time.sleep(0.1)


def read_meanwhile(url: str, pushes: Pushes, until: threading.Event) -> list[tuple[int, int]]:
    """(samples a query counted, samples pushed by then) of queries run until `until`."""
    store = FleetStore(url)
    seen = []
    while not until.is_set():
        try:
            counted = fleet_top(store, T0 - 3 * 86400, T0 + 7200)["samples"]
        except UserError:  # nothing stored yet, or files changed under it three times
            continue
        with pushes.lock:
            seen.append((counted, pushes.sent))
    return seen


def maintain(env: dict, url: str, kill_after: float | None, *verb: str) -> tuple[int, str]:
    """`perfsleuth fleet VERB --store url` (compact by default), killed with -9 after
    `kill_after` seconds unless None; its exit status and stderr."""
    command = [str(PERFSLEUTH), "fleet", *(verb or ("compact",)), "--store", url]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    if kill_after is not None:
        time.sleep(kill_after)
        proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


@pytest.mark.timeout(600)
def test_collectors_and_compactions_at_once_with_kills_count_every_push_once(
    s3_server: S3Server,  # noqa: F811
    s3_url: str,  # noqa: F811
) -> None:
    """3 collectors, 3 compactions or retention runs at a time (some killed with -9), a
    collector killed and started again: the totals equal the acknowledged pushes but
    those of the day retention drops, and every refusal was one line."""
    env = {**os.environ, **s3_server.env()}
    pool = stack_pool()
    old = T0 - 2 * 86400  # a day the retention runs drop
    windows = [
        make_window(i, T0 + (i // 6) * 60 + (i % 6), f"host-{i % 6}", "api", pool, seed=i)
        for i in range(240)
    ] + [make_window(i, old + i * 60, "host-old", "api", pool, seed=i) for i in range(12)]
    expire = ("expire", "--older-than", f"{(time.time() - (T0 - 43200)) // 3600:.0f}h")
    collectors = [start(s3_url, "--token", TOKEN) for _ in range(3)]  # type: ignore[arg-type]
    pushes = Pushes(collectors, windows)
    pushers = [threading.Thread(target=pushes.run, args=(k, 4)) for k in range(4)]
    for t in pushers:
        t.start()
    pushed = threading.Event()
    reader = ThreadPoolExecutor(1)
    reads = reader.submit(read_meanwhile, s3_url, pushes, pushed)
    rng = random.Random(7)
    errors: list[str] = []
    codes: list[int] = []
    try:
        for round_ in range(6):
            kills = [rng.choice([None, rng.uniform(0.3, 3.0)]) for _ in range(3)]
            verbs = [("compact",), ("compact",), rng.choice([("compact",), expire])]
            with ThreadPoolExecutor(3) as runs:
                planned = zip(kills, verbs, strict=True)
                done = [runs.submit(maintain, env, s3_url, k, *v) for k, v in planned]
                if round_ == 2:  # a collector dies mid-push and comes back on its port
                    victim = collectors[0]
                    victim.proc.send_signal(signal.SIGKILL)
                    victim.proc.communicate()
                    again = start(s3_url, "--token", TOKEN, port=victim.port)  # type: ignore[arg-type]
                    collectors[0] = again
            results = [f.result() for f in done]
            codes += [code for code, _ in results]
            errors += [err for code, err in results if code not in (0, -9)]
            assert all(code in (0, 2, -9) for code, _ in results), results
    finally:
        for t in pushers:
            t.join()
        pushed.set()
        reader.shutdown()
        for running in collectors:
            stop(running)
    seen = reads.result()
    assert seen and all(counted <= sent for counted, sent in seen), seen  # never twice
    assert 0 in codes and -9 in codes  # some compactions ran through, some were killed
    assert any("holds the maintenance lease" in err for err in errors)
    for err in errors:
        assert err.startswith("perfsleuth: ") and err.count("\n") == 1, err
        assert not any(raw in err for raw in RAW_ERRORS), err
    assert len(pushes.acknowledged) == len(windows)
    code, err = maintain(env, s3_url, None, *expire)  # killed runs never block the next one
    assert code == 0, err
    kept = sum(n for w, n in pushes.acknowledged.items() if not w.startswith("host-old"))
    store = FleetStore(s3_url)
    assert fleet_top(store, old, T0 + 7200)["samples"] == kept
    code, err = maintain(env, s3_url, None)
    assert code == 0, err
    assert fleet_top(store, old, T0 + 7200)["samples"] == kept
    assert store.select(old, T0 + 3600).levels == {"hour": 1}
