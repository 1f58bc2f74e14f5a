"""The fleet endpoints of the API over a real fleet store (FleetStore.append, DuckDB):
they answer what the fleet queries answer, and bad input is a clear 4xx."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import jsonschema
import pytest

from perfsleuth.fleet import advice, queries, trends
from perfsleuth.model.fleet import LABEL_GROUPINGS, Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.server.api import Api
from perfsleuth.server.fleet_api import FleetApi
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.runs import Store

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "schemas" / "documents.schema.json").read_text()
)
T0 = 1_700_000_000.0 - 1_700_000_000.0 % 3600
RANGE = {"from": [str(T0)], "to": [str(T0 + 3600)]}
SIDES = {f"{side}_{name}": RANGE[name] for side in "ab" for name in RANGE}  # a diff's
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
    span = SIDES if path == "/api/fleet/diff" else RANGE
    response = api.get(path, {**span, **{k: [v] for k, v in params.items()}})
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
    assert labels["type"] == ["cpu"]  # the profile types, picked with type=... as a label


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
        ("/api/fleet/top", {"by": "label:a b"}, "or label:NAME for any label"),
        ("/api/fleet/top", {"sort": "name"}, "bad sort='name'"),
        ("/api/fleet/top", {"n": "-1"}, "bad n='-1'"),
        ("/api/fleet/top", {"where": "service"}, "bad --where condition 'service'"),
        ("/api/fleet/flame", {"by": "dso"}, "unknown parameter 'by'"),
        ("/api/fleet/labels", {"where": "host=a"}, "unknown parameter 'where'"),
        ("/api/fleet/series", {}, "give function=NAME"),
        ("/api/fleet/series", {"function": "nope"}, "no samples of 'nope'"),
        ("/api/fleet/diff", {"a_from": "x"}, "bad a_from='x'"),
        ("/api/fleet/diff", {"a_where": "version=9"}, "side A has no samples where version=9"),
        ("/api/fleet/diff", {"from": str(T0)}, "unknown parameter 'from'"),
        ("/api/fleet/advise", {"core_cost": "-3"}, "bad core_cost='-3'"),
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
    assert status == 404  # nothing stored yet: an empty state the page explains, not a failure
    assert "perfsleuth collector --store" in doc["error"]
    assert api.get("/api/runs", {}).body == b"[]"  # no run store either: no runs, not an error


def test_series_is_fleet_series_one_point_per_bucket(api: Api, fleet: FleetStore) -> None:
    status, doc = get(api, "/api/fleet/series", function="malloc", where="service=api")
    assert status == 200
    expected = trends.series(fleet, "malloc", T0, T0 + 3600, where="service=api")
    assert doc == json.loads(json.dumps(expected))
    assert len(doc["points"]) == 3600 // doc["step"]
    assert doc["step"] == 180  # the windows of minutes 0-2, then of minute 3
    assert [p["self"] for p in doc["points"] if p["samples"]] == [1.0, 1.0]


def test_diff_of_two_label_sets(api: Api, fleet: FleetStore) -> None:
    sides = {"a_where": "version=1.4", "b_where": "version=1.5"}
    status, doc = get(api, "/api/fleet/diff", **sides, by="function", n="0")
    assert status == 200
    a, b = trends.Side(T0, T0 + 3600, "version=1.4"), trends.Side(T0, T0 + 3600, "version=1.5")
    assert doc == json.loads(json.dumps(trends.diff(fleet, a, b, n=0)))
    grew = {r["function"] for r in doc["rows"] if r["delta_self"] > 0}
    assert grew == {"inflate", "hash"}


def test_diff_of_two_time_ranges(api: Api) -> None:
    ranges = {"a_from": T0, "a_to": T0 + 120, "b_from": T0 + 120, "b_to": T0 + 3600}
    _, doc = get(api, "/api/fleet/diff", **{k: str(v) for k, v in ranges.items()})
    assert (doc["a"]["from"], doc["a"]["to"], doc["b"]["to"]) == (T0, T0 + 120, T0 + 3600)
    assert doc["rows"]  # windows 0, 1 against 2, 3: the counts grow with i


def test_advise_ranks_findings_by_cores_saved(api: Api, fleet: FleetStore) -> None:
    status, doc = get(api, "/api/fleet/advise", core_cost="50")
    assert status == 200
    options = advice.FleetAdvice(core_cost=50.0)
    assert doc == json.loads(json.dumps(advice.advise(fleet, T0, T0 + 3600, None, options)))
    found = {f["rule"]: f for f in doc["findings"]}
    assert [s["service"] for s in found["allocator.glibc"]["services"]] == ["api"]
    assert [s["service"] for s in found["compression.zlib"]["services"]] == ["db"]
    saved = [f["cores_saved"] for f in doc["findings"]]
    assert saved == sorted(saved, reverse=True)
    zlib = found["compression.zlib"]
    assert zlib["money_per_month"] == 50 * zlib["cores_saved"]


def test_a_debuginfod_server_away_is_told_on_serves_stderr_once(tmp_path: Path, capsys) -> None:
    unknown = Frame("[unknown] app+0x1130", "app", build_id="ab" * 20, address=0x1130)
    builder = ProfileBuilder()
    builder.add([unknown, MAIN], 1.0, count=5, thread=Thread(7, 7, "api"))
    labels = {"host": "h", "service": "api"}
    store = FleetStore(str(tmp_path / "fleet"), debuginfod=["http://127.0.0.1:9"])  # discard
    store.append(Window(id="w-1", start=T0, end=T0 + 10, profile=builder.build(), labels=labels))
    fleet = FleetApi(store)
    for _ in range(2):
        rows = fleet.top(RANGE)["rows"]
        assert "[unknown] app+0x1130" in {r["function"] for r in rows}  # still answered
    (told,) = capsys.readouterr().err.splitlines()
    assert told.startswith("perfsleuth: warning: debuginfod server http://127.0.0.1:9 did not")
    assert told.endswith("); skipped")


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/api/fleet/labels", {}, "FleetLabels"),
        ("/api/fleet/top", {}, "FleetTopDoc"),
        ("/api/fleet/top", {"by": "library"}, "FleetTopDoc"),
        ("/api/fleet/top", {"by": "service"}, "FleetTopDoc"),
        ("/api/fleet/series", {"function": "inflate"}, "FleetSeriesDoc"),
        ("/api/fleet/cpu", {}, "FleetCpuDoc"),
        ("/api/fleet/diff", {"a_where": "service=api"}, "FleetDiffDoc"),
        ("/api/fleet/advise", {"core_cost": "50"}, "FleetAdviceDoc"),
    ],
)
def test_fleet_documents_follow_the_schema(api: Api, path: str, params: dict, name: str) -> None:
    """The documents typed in views/documents.py, which the UI's types are generated from."""
    status, doc = get(api, path, **params)
    assert status == 200, doc
    jsonschema.validate(doc, {**SCHEMA, "$ref": f"#/$defs/{name}"})


def test_fleet_status_follows_the_schema(api: Api) -> None:
    doc = json.loads(api.get("/api/fleet/status", {}).body)
    assert doc["hosts"]
    jsonschema.validate(doc, {**SCHEMA, "$ref": "#/$defs/FleetStatus"})


def test_a_fleet_document_missing_a_key_fails_the_schema(api: Api) -> None:
    _, doc = get(api, "/api/fleet/advise")
    assert doc["findings"]
    del doc["findings"][0]["cores_saved"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, {**SCHEMA, "$ref": "#/$defs/FleetAdviceDoc"})


def test_every_label_grouping_is_a_key_of_a_top_row() -> None:
    assert set(LABEL_GROUPINGS) <= set(SCHEMA["$defs"]["TopRow"]["properties"])
