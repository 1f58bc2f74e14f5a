"""The Fleet page in a real browser (fleet_flow.mjs, Debian's Chromium) against
`perfsleuth serve --fleet-store` over a fleet store filled with FleetStore.append:
what the page shows is what the fleet queries answer. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_serve import flow_results, served

from perfsleuth.fleet import advice, queries, trends
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.store.fleet import FleetStore
from perfsleuth.symbols.names import elide_templates

MINUTES = 20  # one window per host and minute, from 40 to 20 minutes ago
MAIN = Frame("main", "app", "main.c", 3)
# A C++ name as perf gives it: the pages print it short, as run pages do.
HASH_KEY = (
    "std::_Hashtable<std::string, std::pair<std::string const, int>, "
    "std::allocator<std::pair<std::string const, int> > >::_M_find_before_node"
    "(unsigned long, std::string const&, unsigned long) const"
)
HOSTS = {  # host: (service, version, leaf functions and their samples per window)
    "web-1": ("api", "1.4", {"malloc": 30, "parse_json": 20}),
    "web-2": ("api", "1.5", {"malloc": 45, "parse_json": 10}),
    "db-1": ("db", "1.5", {"inflate": 40, HASH_KEY: 15}),
}
DSOS = {"inflate": "libz.so.1"}  # the zlib rule looks for zlib's functions in zlib

pytestmark = pytest.mark.integration


def window(host: str, minute: int, start: float) -> Window:
    service, version, leaves = HOSTS[host]
    builder = ProfileBuilder()
    for leaf, samples in leaves.items():
        caller = Frame(f"handle_{service}", "app", f"{service}.c", 12)
        # malloc grows over the range: the series of the selected function shows it
        count = samples + (minute if leaf == "malloc" else 0)
        thread = Thread(9, 9, service)
        builder.add(
            [Frame(leaf, DSOS.get(leaf, "app")), caller, MAIN], 1.0, count=count, thread=thread
        )
    return Window(
        id=f"{host}-{minute}",
        start=start,
        end=start + 10,
        profile=builder.build(),
        labels={"host": host, "service": service, "version": version},
        processes={9: Process(f"/usr/bin/{service}", f"build-{service}")},
        rate_hz=19.0,
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> FleetStore:
    store = FleetStore(str(tmp_path_factory.mktemp("ui-fleet") / "fleet"))
    first = time.time() - 40 * 60
    for minute in range(MINUTES):
        for host in HOSTS:
            store.append(window(host, minute, first + 60 * minute))
    return store


@pytest.fixture(scope="module")
def server(fleet: FleetStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    runs = tmp_path_factory.mktemp("ui-fleet-runs")
    with served(runs, "--fleet-store", fleet.root) as url:
        yield url


@pytest.fixture(scope="module")
def shown(server: str) -> dict[str, dict]:
    return flow_results(Path(__file__).with_name("fleet_flow.mjs"), server)


def fleet_rows(store: FleetStore, where: str | None = None) -> list[list[str]]:
    """[function, self as the page prints it] of `fleet top` over every stored window."""
    now = time.time()
    doc = queries.top(store, now - 7200, now, where, n=0)
    return [[elide_templates(r["function"]), f"{100 * r['self']:.2f}%"] for r in doc["rows"]]


def test_top_rows_are_the_fleet_top(shown: dict[str, dict], fleet: FleetStore) -> None:
    assert shown["fleet_top"]["rows"] == fleet_rows(fleet)


def test_a_label_filter_changes_the_rows(shown: dict[str, dict], fleet: FleetStore) -> None:
    filtered = shown["fleet_top"]["filtered"]
    assert filtered == fleet_rows(fleet, "service=db")
    assert {f for f, _ in filtered} == {"inflate", elide_templates(HASH_KEY), "handle_db", "main"}
    assert "where=service%3Ddb" in shown["fleet_top"]["url"]


def test_the_flame_graph_is_drawn(shown: dict[str, dict]) -> None:
    flame = shown["fleet_flame"]
    assert flame["drawn"] >= 5  # main, handle_db, inflate, hash_key under the root
    assert {"main", "handle_db", "inflate", HASH_KEY} <= set(flame["names"])
    assert "malloc" not in flame["names"]  # where=service=db


def test_the_url_restores_the_state(shown: dict[str, dict]) -> None:
    restored = shown["fleet_restore"]
    assert restored["service"] == "api"
    assert restored["by"] == "dso"
    assert restored["range"] == "last 6h"
    assert restored["rows"] == [["app", "100.00%"]]
    assert restored["selected"].startswith("malloc")


def test_the_series_chart_has_one_point_per_bucket(
    shown: dict[str, dict], fleet: FleetStore
) -> None:
    chart = shown["fleet_series"]
    doc = trends.series(fleet, "malloc", chart["from"], chart["to"], where="service=api")
    assert len(chart["points"]) == len(doc["points"]) > 10
    for title, point in zip(chart["points"], doc["points"], strict=True):
        if point["samples"]:
            assert f"total {100 * point['total']:.2f}%" in title
        else:
            assert title.endswith("no samples")


def test_the_diff_lists_the_function_that_grew(shown: dict[str, dict], fleet: FleetStore) -> None:
    diff = shown["fleet_diff"]
    a, b = (trends.Side(*map(float, diff["sides"][s].split(".."))) for s in "ab")
    doc = trends.diff(fleet, a, b, n=50)
    assert [r["name"] for r in diff["rows"]] == [
        elide_templates(r["function"]) for r in doc["rows"]
    ]
    grew = [r for r in diff["rows"] if r["grew"]]
    assert grew[0]["name"] == "malloc"  # its samples grow every minute
    assert grew[0]["delta_self"] == f"+{100 * doc['rows'][0]['delta_self']:.2f}%"
    assert "a=" in diff["url"] and "b=" in diff["url"]
    # A diff flame graph of the two sides, and how much CPU time each side holds.
    assert diff["flame"]["columns"] == ["a", "b"] and "malloc" in diff["flame"]["names"]
    totals = [float(t) for t in re.findall(r"\(([\d.]+) CPU s\)", diff["sideTotals"])]
    assert len(totals) == 2 and all(t > 0 for t in totals)


def test_the_cpu_timeline_and_the_label_breakdown(
    shown: dict[str, dict], fleet: FleetStore
) -> None:
    flow = shown["fleet_timeline_and_labels"]
    assert len(flow["bars"]) > 10 and any(
        "cores" in b and " 0 samples" not in b for b in flow["bars"]
    )
    start, end = (int(re.search(rf"{k}=(\d+)", flow["dragged"]).group(1)) for k in ("from", "to"))
    assert 0 < end - start < 3600  # a span of the hour, not the hour
    now = time.time()
    doc = queries.top(fleet, now - 3600, now, None, by="service", n=0)
    expected = {r["service"]: f"{100 * r['self']:.2f}%" for r in doc["rows"]}
    assert {row[2]: row[0] for row in flow["services"]} == expected
    assert "where=service%3Ddb" in flow["filtered"]
    by_version = queries.top(fleet, now - 3600, now, None, by="label:version", n=0)
    expected = {r["version"]: f"{100 * r['self']:.2f}%" for r in by_version["rows"]}
    assert len(expected) > 1 and {row[2]: row[0] for row in flow["versions"]} == expected
    assert any("version" in h for h in flow["header"])
    assert re.search(r"where=version%3D[\w.]+", flow["byVersion"])


def test_the_fleet_pages_have_no_serious_accessibility_violation(shown: dict[str, dict]) -> None:
    assert shown["fleet_accessibility"] == []


def test_findings_are_ranked_by_cores_saved(shown: dict[str, dict], fleet: FleetStore) -> None:
    findings = shown["fleet_findings"]["findings"]
    saved = [float(f["saved"].split()[0]) for f in findings]
    assert saved == sorted(saved, reverse=True)
    now = time.time()
    doc = advice.advise(fleet, now - 7200, now, None, advice.FleetAdvice())
    assert [f["rule"] for f in findings] == [f["rule"] for f in doc["findings"]]
    by_rule = {f["rule"]: f for f in findings}
    assert by_rule["allocator.glibc"]["services"].startswith("services: api (")
    assert "web-1" in by_rule["allocator.glibc"]["hosts"]
    assert "web-2" in by_rule["allocator.glibc"]["hosts"]
    assert by_rule["compression.zlib"]["services"].startswith("services: db (")
    assert "perfsleuth try allocator -- /usr/bin/api" in by_rule["allocator.glibc"]["fix"]
    assert all("per month" in f["saved"] for f in findings)
