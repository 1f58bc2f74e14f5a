"""/api/runs/N/timeline: the samples in time order, placed on the nodes of the same
run's /flame, a thread at a time or all; runs without times say why."""

from __future__ import annotations

import json
import struct
from array import array
from pathlib import Path

import pytest

from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.model.timeline import Timeline
from perfsleuth.server.api import Api
from perfsleuth.store.runs import Store

MAIN, WORK, PARSE, MALLOC = Frame("main"), Frame("work"), Frame("parse"), Frame("malloc")
STACKS = [[WORK, MAIN], [MALLOC, WORK, MAIN], [PARSE, MAIN], [MAIN]]
# (stack index in STACKS, thread tid, samples), in time order
SAMPLED = [(0, 1, 2), (1, 1, 1), (2, 2, 3), (0, 1, 1), (0, 2, 1), (0, 1, 4), (3, 2, 1)]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    store = Store(tmp_path_factory.mktemp("timeline") / "store")
    builder = ProfileBuilder(unit="samples")
    for stack, tid, n in SAMPLED:
        builder.add(STACKS[stack], n, count=n, thread=Thread(tid, 1, f"t{tid}"))
    profile = builder.build()
    sid = {tuple(profile.frames[f] for f in s): i for i, s in enumerate(profile.stacks)}
    index = {t.tid: i for i, t in enumerate(profile.threads)}
    profile.timeline = Timeline()
    for k, (stack, tid, n) in enumerate(SAMPLED):
        profile.timeline.add(sid[tuple(STACKS[stack])], index[tid], n, 1_000 + 10 * k)
    store.add_run(RunInfo(command="app", mode="cpu"), Recording(profile))
    profile.timeline = None
    store.add_run(RunInfo(command="import a.folded", source="import:folded"), Recording(profile))
    store.add_run(RunInfo(command="app", mode="cpu"), Recording(profile))
    return Api(store, [])


def decoded(body: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack_from("<I", body)
    return json.loads(body[4 : 4 + length]), body[4 + length :]


def flame_paths(api: Api, **params: list[str]) -> list[tuple[str, ...]]:
    """Per node of /flame, the names from the root's child down to it."""
    header, rest = decoded(api.get("/api/runs/1/flame", params).body)
    n = header["nodes"]
    rest = rest[8 * n * len(header["columns"]) :]
    names, depths = array("i", rest[: 4 * n]), array("H", rest[4 * n : 6 * n])
    paths: list[tuple[str, ...]] = []
    for name, depth in zip(names, depths, strict=True):
        parent = paths[-1] if paths else ()
        while len(parent) >= depth and parent:
            parent = parent[:-1]
        paths.append((*parent[: depth - 1], header["names"][name]) if depth else ())
    return paths


Run = tuple[float, int, int, int]  # time, leaf node, samples, thread index


def timeline(api: Api, **params: list[str]) -> tuple[dict, list[Run]]:
    response = api.get("/api/runs/1/timeline", params)
    assert response.status == 200, response.body
    header, rest = decoded(response.body)
    n = header["runs"]
    time, node, count = array("d", rest[: 8 * n]), array("I", rest[8 * n : 12 * n]), array("I")
    count.frombytes(rest[12 * n : 16 * n])
    thread = array("I", rest[16 * n : 20 * n])
    assert len(rest) == 20 * n
    return header, list(zip(time, node, count, thread, strict=True))


def expected(tids: set[int]) -> list[tuple[tuple[str, ...], int, int]]:
    """Root-first names, samples and tid of each run, neighbours on one stack and thread
    merged."""
    out: list[tuple[tuple[str, ...], int, int]] = []
    for stack, tid, n in SAMPLED:
        if tids and tid not in tids:
            continue
        path = tuple(f.function for f in reversed(STACKS[stack]))
        if out and out[-1][0] == path and out[-1][2] == tid:
            out[-1] = (path, out[-1][1] + n, tid)
        else:
            out.append((path, n, tid))
    return out


def shown(api: Api, header: dict, runs: list[Run], **params: list[str]) -> list:
    paths = flame_paths(api, **params)
    tids = [tid for tid, _ in header["threads"]]
    return [(paths[node], count, tids[thread]) for _, node, count, thread in runs]


def test_runs_are_the_samples_in_time_order_on_flame_nodes(api: Api) -> None:
    header, runs = timeline(api)
    assert shown(api, header, runs) == expected(set())
    # threads 1, 2, 1 on one stack in a row stay three runs: one per thread, for the lanes
    assert header == {
        "runs": 7,
        "samples": 13,
        "duration_ns": 60,
        "unit": "samples",
        "threads": [[1, "t1"], [2, "t2"]],
    }
    assert [time for time, _, _, _ in runs] == [0, 10, 20, 30, 40, 50, 60]


def test_one_threads_runs_merge_across_the_others(api: Api) -> None:
    header, runs = timeline(api, thread=["1"])
    assert shown(api, header, runs, thread=["1"]) == expected({1})
    assert expected({1})[-1] == (("main", "work"), 5, 1)  # 1 + 4 samples, thread 2's between
    assert header["samples"] == 8


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        ("2", "run 2 was imported from folded, which keeps no sample times"),
        ("3", "run 3 keeps no sample times: it was recorded before perfsleuth kept them"),
    ],
)
def test_runs_without_times_say_why(api: Api, run: str, reason: str) -> None:
    response = api.get(f"/api/runs/{run}/timeline", {})
    assert response.status == 404
    assert json.loads(response.body)["error"].startswith(reason)


def test_bad_parameters(api: Api) -> None:
    for query, error in [
        ({"state": ["running"]}, "unknown parameter 'state'"),
        ({"thread": ["x"]}, "bad thread='x'"),
    ]:
        response = api.get("/api/runs/1/timeline", query)
        assert response.status == 400
        assert json.loads(response.body)["error"].startswith(error)


def test_a_count_run_says_it_took_no_samples(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    builder = ProfileBuilder(unit="instructions")
    builder.add([MAIN], 1000)
    store.add_run(RunInfo(command="app", mode="count"), Recording(builder.build()))
    response = Api(store, []).get("/api/runs/1/timeline", {})
    assert json.loads(response.body)["error"] == (
        "run 1 counts instructions exactly (valgrind); it took no timed samples"
    )


def test_the_whole_runs_time_order_is_kept_for_the_next_server(api: Api) -> None:
    first = api.get("/api/runs/1/timeline", {})
    (kept,) = (api.store.root / "answers").glob("run1-timeline-*.bin")
    assert kept.read_bytes() == first.body
    kept.write_bytes(first.body + b"\x07")  # a marked copy: a fresh server sends it
    assert Api(api.store, []).get("/api/runs/1/timeline", {}).body.endswith(b"\x07")
    one_thread = Api(api.store, []).get("/api/runs/1/timeline", {"thread": ["1"]})
    assert one_thread.status == 200 and not one_thread.body.endswith(b"\x07")
    assert not list((api.store.root / "answers").glob("run2-timeline-*"))  # 404: nothing kept
