"""The fleet endpoints of the API over a real fleet store (FleetStore.append, DuckDB):
they answer what the fleet queries answer, and bad input is a clear 4xx."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from perfsleuth.fleet import queries
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.server.api import Api
from perfsleuth.server.fleet_api import FleetApi
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.runs import Store

T0 = 1_700_000_000.0 - 1_700_000_000.0 % 3600
RANGE = {"from": [str(T0)], "to": [str(T0 + 3600)]}
MAIN = Frame("main", "app", "main.c", 3)
STACKS = {
    "api": [[Frame("malloc", "libc.so.6"), Frame("parse", "app", "parse.c", 9), MAIN]],
    "db": [[Frame("inflate", "libz.so.1"), MAIN], [Frame("hash", "app", "hash.c", 4), MAIN]],
}


def window(i: int, host: str, service: str, version: str) -> Window:
    builder = ProfileBuilder()
    for k, stack in enumerate(STACKS[service]):
        builder.add(stack, 1.0, count=10 * (k + 1) + i, thread=Thread(7, 7, service))
    return Window(
        id=f"{host}-{i}",
        start=T0 + 60 * i,
        end=T0 + 60 * i + 10,
        profile=builder.build(),
        labels={"host": host, "service": service, "version": version},
        processes={7: Process("/usr/bin/" + service, "b-" + service)},
        rate_hz=19.0,
    )


@pytest.fixture
def fleet(tmp_path: Path) -> FleetStore:
    store = FleetStore(str(tmp_path / "fleet"))
    for i in range(4):
        store.append(window(i, "web-1", "api", "1.4"))
        store.append(window(i, "db-1", "db", "1.5"))
    return store


@pytest.fixture
def api(tmp_path: Path, fleet: FleetStore) -> Api:
    api = Api(Store(tmp_path / "runs"), [])
    FleetApi(fleet).attach(api)
    return api


def get(api: Api, path: str, **params: str) -> tuple[int, dict]:
    response = api.get(path, {**RANGE, **{k: [v] for k, v in params.items()}})
    return response.status, json.loads(response.body)


def test_top_is_the_fleet_query_over_the_range(api: Api, fleet: FleetStore) -> None:
    status, doc = get(api, "/api/fleet/top", by="function", n="0")
    assert status == 200
    assert doc == json.loads(json.dumps(queries.top(fleet, T0, T0 + 3600, None, n=0)))
    assert {r["function"] for r in doc["rows"]} == {"malloc", "parse", "inflate", "hash", "main"}


def test_top_filters_and_sorts(api: Api) -> None:
    _, doc = get(api, "/api/fleet/top", where="service=db", sort="total", n="2")
    assert [r["function"] for r in doc["rows"]] == ["main", "hash"]
    assert doc["where"] == "service=db"


def test_flame_is_the_flame_page_format(api: Api) -> None:
    response = api.get("/api/fleet/flame", {**RANGE, "where": ["version=1.4"]})
    assert response.status == 200
    (length,) = struct.unpack_from("<I", response.body)
    header = json.loads(response.body[4 : 4 + length])
    assert header["unit"] == "ns"
    assert header["from"] == T0
    assert header["columns"] == ["total"]
    assert set(header["names"]) == {"main", "parse", "malloc"}
    assert header["nodes"] == 4  # the root, main, parse, malloc


def test_labels_list_every_key_and_value_of_the_range(api: Api) -> None:
    status, doc = get(api, "/api/fleet/labels")
    assert status == 200
    labels = doc["labels"]
    assert labels["host"] == ["db-1", "web-1"]
    assert labels["service"] == ["api", "db"]
    assert labels["version"] == ["1.4", "1.5"]
    assert labels["exe"] == ["/usr/bin/api", "/usr/bin/db"]
    assert "cgroup" not in labels  # no window carries one


def test_status_names_the_hosts(api: Api) -> None:
    response = api.get("/api/fleet/status", {})
    assert [h["host"] for h in json.loads(response.body)["hosts"]] == ["db-1", "web-1"]


@pytest.mark.parametrize(
    ("path", "params", "says"),
    [
        ("/api/fleet/top", {"from": "yesterday"}, "bad from='yesterday': give unix seconds"),
        ("/api/fleet/top", {"to": "nan"}, "bad to='nan'"),
        ("/api/fleet/top", {"from": str(T0 + 10), "to": str(T0)}, "--from must be before --to"),
        ("/api/fleet/top", {"by": "colour"}, "bad by='colour'"),
        ("/api/fleet/top", {"sort": "name"}, "bad sort='name'"),
        ("/api/fleet/top", {"n": "-1"}, "bad n='-1'"),
        ("/api/fleet/top", {"where": "service"}, "bad --where condition 'service'"),
        ("/api/fleet/flame", {"by": "dso"}, "unknown parameter 'by'"),
        ("/api/fleet/labels", {"where": "host=a"}, "unknown parameter 'where'"),
    ],
)
def test_bad_input_is_a_400_saying_what_to_pass(
    api: Api, path: str, params: dict[str, str], says: str
) -> None:
    status, doc = get(api, path, **params)
    assert status == 400
    assert says in doc["error"]


def test_an_empty_fleet_store_says_how_to_fill_it(tmp_path: Path) -> None:
    api = Api(Store(tmp_path / "runs"), [])
    FleetApi(FleetStore(str(tmp_path / "nothing"))).attach(api)
    status, doc = get(api, "/api/fleet/top")
    assert status == 400
    assert "perfsleuth collector --store" in doc["error"]
