"""The Cache page in a real browser (cache_flow.mjs, Debian's Chromium) against
`perfsleuth serve` over a real cache run of examples/bin/conntable: the struct
layout it draws is the one `perfsleuth cache show` computes. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from cli_runner import perfsleuth
from ui_serve import flow_results, served

CACHE_RUN = "1"
PLAIN_RUN = "2"
SCALE_RUN = "3"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run 1: `record --mode cache` of conntable's handle_packet; run 2: a folded
    profile, no cache data; run 3: handle_packet with `--scale`."""
    base = tmp_path_factory.mktemp("cpu-cache-page")
    store = base / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "handle_packet",
        "--", str(examples_built / "conntable"), "2000",
    )  # fmt: skip
    folded = base / "plain.folded"
    folded.write_text("main;work 10\nmain;idle 3\n")
    perfsleuth(store, "import", str(folded))
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "handle_packet",
        "--scale", "n=200,400,800", "--", str(examples_built / "conntable"), "{n}",
    )  # fmt: skip
    return store


def cache_show(store: Path, run: str) -> dict:
    shown = perfsleuth(store, "cache", "show", run, "--format", "json")
    (function,) = json.loads(shown.stdout)["functions"]
    return function


@pytest.fixture(scope="module")
def cache_run(store: Path) -> dict:
    return cache_show(store, CACHE_RUN)


@pytest.fixture(scope="module")
def report(store: Path) -> Path:
    out = store.parent / "report.html"
    perfsleuth(store, "report", CACHE_RUN, "-o", str(out))
    return out


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[str]:
    with served(store) as url:
        yield url


@pytest.fixture(scope="module")
def shown(server: str, report: Path) -> dict[str, dict]:
    flow = Path(__file__).with_name("cache_flow.mjs")
    return flow_results(flow, server, CACHE_RUN, PLAIN_RUN, SCALE_RUN, str(report))


def test_last_ack_is_drawn_hot_on_an_otherwise_cold_line(shown: dict[str, dict]) -> None:
    line = next(row for row in shown["cache_layout"]["lines"] if "last_ack" in row["hot"])
    assert line["line"] == 4
    assert line["state"] == "hot"
    assert line["hot"] == ["last_ack"]
    assert line["cold"] == ["errors", "closed_ns", "owner", "reserved"]
    assert "move last_ack from line 4 to line 0" in shown["cache_layout"]["reorder"]


def test_every_line_is_drawn_as_cache_show_computes_it(
    shown: dict[str, dict], cache_run: dict
) -> None:
    expected = [
        {
            "line": row["line"],
            "state": "hot" if row["hot_fields"] else "cold",
            "hot": row["hot_fields"],
            "cold": row["cold_fields"],
        }
        for row in cache_run["layout"]["lines"]
    ]
    drawn = shown["cache_layout"]["lines"]
    assert [{k: v for k, v in row.items() if k != "border"} for row in drawn] == expected
    dashed = [row["line"] for row in drawn if row["border"] == "dashed"]  # cold, told apart
    assert dashed == [row["line"] for row in expected if row["state"] == "cold"] == [1, 2, 3]


def test_model_table_shows_the_misses_of_each_level(
    shown: dict[str, dict], cache_run: dict
) -> None:
    rows = {
        level: [int(cell.replace(",", "")) for cell in cells[1:4]]
        for level, *cells in shown["cache_layout"]["model"]
    }
    model = cache_run["model"]
    # a sampled trace's misses are expected values: the page shows them rounded
    expected = {level: round(misses) for level, misses in model["misses"].items()}
    assert {level: misses for level, (_, _, misses) in rows.items()} == expected
    assert rows["L1d"][0] == model["accesses"]
    for lookups, hits, misses in rows.values():
        assert abs(hits - (lookups - misses)) <= 1  # each of the three rounded on its own


def test_a_run_without_cache_data_has_no_cache_link_and_says_so(shown: dict[str, dict]) -> None:
    page = shown["no_cache_data"]
    assert "Cache" not in page["nav"] and "Findings" in page["nav"]
    assert f"run {PLAIN_RUN} has no cache projections" in page["text"]
    assert page["api"]["status"] == 404
    assert "has no cache projections" in page["api"]["body"]["error"]


def test_scaling_cliffs_are_the_ones_cache_show_predicts(
    shown: dict[str, dict], store: Path
) -> None:
    scaling = cache_show(store, SCALE_RUN)["scaling"]
    expected = [
        {
            "level": cliff["level"],
            "capacity": capacity_text(cliff),
            "at": f"n = {cliff['n']:,}" if cliff["n"] else "never",
            "flagged": cliff["in_range"],
        }
        for cliff in scaling["cliffs"]
    ]
    assert shown["scaling"]["cliffs"] == expected
    assert [c["level"] for c in expected] == ["L1d", "L2", "LLC"]
    tlb = scaling["tlb"]
    if tlb["available"]:
        assert f"{tlb['reach_pages']:,} pages (measured)" in shown["scaling"]["tlb"]
        assert (f"n = {tlb['n']:,}" if tlb["n"] else "never") in shown["scaling"]["tlb"]
    else:
        assert f"not predicted: {tlb['reason']}" in shown["scaling"]["tlb"]
    assert shown["scaling"]["runs"] == len(scaling["runs"]) == 3
    plotted = {"dots": 3, "cliffs": sum(1 for cliff in scaling["cliffs"] if cliff["n"])}
    assert shown["scaling"]["plot"] == plotted


def capacity_text(cliff: dict) -> str:
    held = f"{cliff['capacity_lines']:,} lines"
    if cliff.get("capacity_source") == "measured":
        held = f"{held} measured (sysfs: {cliff['nominal_capacity_lines']:,})"
    if "prefetched_room" in cliff:
        room = round(cliff["prefetched_room"] * 100)
        held = f"{held}; a prefetched line nobody touched takes {room}% of a line's room"
    if cliff["usable_share"] >= 0.995:
        return held
    return f"{held}, {cliff['usable_lines']:,} usable by its sets"


def test_the_html_report_draws_the_same_layout(shown: dict[str, dict]) -> None:
    assert shown["report"]["lines"] == shown["cache_layout"]["lines"]


def test_the_cache_pages_have_no_serious_accessibility_violation(shown: dict[str, dict]) -> None:
    """Axe, light and dark: hot and cold lines keep their text's contrast."""
    assert shown["cache_accessibility"] == []


@pytest.mark.parametrize("run", [CACHE_RUN, SCALE_RUN])
def test_cache_show_follows_the_generated_schema(store: Path, run: str) -> None:
    """What the Cache page is sent, from a real recording, is the CacheDoc of
    docs/schemas/documents.schema.json (made from model/cpu_cache.py's types)."""
    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "docs/schemas/documents.schema.json").read_text()
    )
    shown = json.loads(perfsleuth(store, "cache", "show", run, "--format", "json").stdout)
    jsonschema.validate(shown, {**schema, "$ref": "#/$defs/CacheDoc"})
