"""The flame page's time order in a real browser (timeline_flow.mjs, Debian's
Chromium) against `perfsleuth serve` over a real perf run of examples/bin/prodcons
(threads) and a folded import (no times): the chart covers every sample of the run,
zooms by mouse, keyboard and URL, filters by thread, shows one lane per thread, and a run
without times says why; last, the folded run is advised from its findings page (the
POST the page sends). Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_runner import perfsleuth
from ui_serve import flow_results, served

from perfsleuth.store.runs import Store

RUN, FOLDED_RUN = "1", "2"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ui-timeline")
    store = base / "store"
    perfsleuth(store, "record", "--", str(examples_built / "prodcons"), "200000")
    folded = base / "plain.folded"
    folded.write_text("main;work 10\nmain;idle 3\n")
    perfsleuth(store, "import", str(folded))
    return store


@pytest.fixture(scope="module")
def shown(store: Path) -> dict[str, dict]:
    with served(store) as url:
        script = Path(__file__).with_name("timeline_flow.mjs")
        return flow_results(script, url, RUN, FOLDED_RUN)


def samples_per_thread(store: Path) -> dict[str, int]:
    profile = Store(store).load(int(RUN))
    counts: dict[str, int] = {}
    for _, _, count, thread, _ in profile.columns():
        tid = str(profile.threads[thread].tid)
        counts[tid] = counts.get(tid, 0) + count
    return counts


def samples_shown(info: str) -> tuple[int, int, int]:
    match = re.match(r"samples ([\d,]+)–([\d,]+) of ([\d,]+), taken ", info)
    assert match, info
    first, end, total = (int(g.replace(",", "")) for g in match.groups())
    return first, end, total


def test_the_chart_covers_every_sample_of_the_run(shown: dict[str, dict], store: Path) -> None:
    flow = shown["time_order"]
    assert samples_shown(flow["whole"]["info"]) == (0, flow["api"], flow["api"])
    assert flow["api"] == sum(samples_per_thread(store).values())
    assert re.search(r"the run's samples span [\d.]+ (s|ms)\)$", flow["whole"]["info"])


def test_zoom_by_keyboard_url_and_escape(shown: dict[str, dict]) -> None:
    flow = shown["time_order"]
    first, end, total = samples_shown(flow["zoomed"]["info"])
    assert [first, end] == flow["zoomed"]["url"]
    assert 0 <= first < end <= total and end - first < total
    assert flow["zoomed"]["details"].split("\n")[0]  # the frame zoomed to, named
    assert samples_shown(flow["reset"]) == (0, total, total)
    assert samples_shown(flow["shared"]["info"]) == (10, 50, total)
    assert flow["shared"]["chart"]["width"] <= 900


def test_the_minimap_picks_and_moves_the_range(shown: dict[str, dict]) -> None:
    """A drag from 20% to 40% of the minimap's width shows those samples (a pixel's worth
    of slack at each end); a click at 80% keeps the span and centres it there."""
    flow = shown["minimap"]
    first, end, total = samples_shown(flow["dragged"]["info"])
    per_pixel = total / flow["width"]
    assert [first, end] == flow["dragged"]["url"]
    assert abs(first - 0.2 * total) <= per_pixel + 1 and abs(end - 0.4 * total) <= per_pixel + 1
    moved_first, moved_end, _ = samples_shown(flow["clicked"])
    assert abs((moved_end - moved_first) - (end - first)) <= 1
    assert abs((moved_first + moved_end) / 2 - 0.8 * total) <= per_pixel + 1
    # the miniature is drawn, not a blank strip (at load prodcons's threads leave gaps in it)
    assert flow["painted"] > 0.05


def test_one_thread_shows_its_own_samples(shown: dict[str, dict], store: Path) -> None:
    flow = shown["thread_filter"]
    own = samples_per_thread(store)[flow["thread"]]
    assert samples_shown(flow["info"])[2] == own < samples_shown(flow["all"])[2]


def test_lanes_show_each_threads_samples_heaviest_first(
    shown: dict[str, dict], store: Path
) -> None:
    flow = shown["lanes"]
    per_thread = samples_per_thread(store)
    assert len(per_thread) >= 3  # prodcons: main, producers and consumers
    lanes = flow["lanes"]
    assert len(lanes) == len(flow["labels"]) == len(per_thread)
    tids = [re.search(r"tid (\d+)\)? · ([\d,]+) samples", label) for label in flow["labels"]]
    assert all(tids), flow["labels"]
    shown_counts = {m.group(1): int(m.group(2).replace(",", "")) for m in tids if m}
    assert shown_counts == per_thread
    assert [lane["samples"] for lane in lanes] == [per_thread[m.group(1)] for m in tids if m]
    assert [lane["samples"] for lane in lanes] == sorted(per_thread.values(), reverse=True)
    # one time axis: every lane spans the same time and shows the same range
    assert len({(lane["extent"], lane["v0"], lane["v1"]) for lane in lanes}) == 1
    assert lanes[0]["painted"] > 0 and lanes[0]["depth"] > 2
    assert all(v == tuple(flow["zoomed"][0]) for v in map(tuple, flow["zoomed"]))
    first, end = flow["zoomed"][0]
    assert [round(first), round(end)] == flow["url"] and end - first < lanes[0]["extent"]
    assert re.match(r"[\d.]+ (s|ms|µs) to [\d.]+ (s|ms|µs) after the first sample", flow["info"])
    assert flow["accessibility"] == []


def test_a_run_without_times_says_why(shown: dict[str, dict]) -> None:
    assert shown["no_time_order"]["text"] == (
        f"No time order for this run: run {FOLDED_RUN} was imported from folded, "
        "which keeps no sample times."
    )


def test_a_run_is_advised_from_its_page(shown: dict[str, dict], store: Path) -> None:
    flow = shown["advise_from_page"]
    assert "`perfsleuth advise 2`" in flow["before"] and "Analyze this run now" in flow["before"]
    assert flow["advised"] is True and "No findings stored for this run" not in flow["after"]
    assert Store(store).documents(int(FOLDED_RUN), "findings")  # kept in the store
    assert flow["accessibility"] == []


def test_no_serious_accessibility_violation(shown: dict[str, dict]) -> None:
    assert shown["accessibility"] == []
