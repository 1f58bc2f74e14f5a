"""Browser end-to-end tests: Debian's Chromium, driven by Playwright (flows.mjs),
against `perfsleuth serve` and a `perfsleuth report` file. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_serve import CLI, served
from uistore import HOSTILE, add_other_run, make_store

from perfsleuth.symbols.names import elide_templates

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
FLOWS = (
    "open_run",
    "flame_search",
    "inlined_in_flame",
    "python_frames",
    "exact_totals",
    "flame_zoom",
    "flame_resize_and_regex",
    "flame_focus_ignore_hide",
    "flame_stale_render",
    "flame_pixel_ratio_2",
    "sandwich",
    "flame_filters_and_orderings",
    "threads",
    "callgraph_levels",
    "finding_source",
    "dark_mode",
    "accessibility",
    "source_heat",
    "hostile_names",
    "short_names",
    "top_table",
    "keyboard",
    "compare_runs",
    "compare_only_comparable",
    "overview_facts",
    "experiments",
    "finding_details",
    "experiment_verdict",
    "token_login",
    "html_report",
    "report_messages",
    "flame_html",
)
TOKEN = "e2e-secret"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ui_built() -> None:
    subprocess.run(["bash", str(ROOT / "scripts" / "build-ui.sh")], check=True)


@pytest.fixture(scope="module")
def servers(ui_built: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    base = tmp_path_factory.mktemp("ui")
    store, _sources = make_store(base)
    add_other_run(store)
    report = base / "report.html"
    subprocess.run(
        [*CLI, "report", "2", "--compare", "1", "--store", str(store.root), "-o", str(report)],
        check=True,
    )
    single = base / "single.html"
    subprocess.run([*CLI, "report", "2", "--store", str(store.root), "-o", str(single)], check=True)
    flame = base / "flame.html"
    running = ["--state", "running", "--html", str(flame)]
    subprocess.run([*CLI, "flame", "2", "--store", str(store.root), *running], check=True)
    with served(store.root) as url, served(store.root, "--token", TOKEN) as token_url:
        yield [url, str(report), str(ARTIFACTS), token_url, TOKEN, str(single), str(flame)]


@pytest.fixture(scope="module")
def flow_results(servers: list[str]) -> dict[str, dict]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("flows.mjs")), *servers],
        capture_output=True,
        text=True,
        timeout=900,  # a bound for a loaded machine, not a measurement
    )
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            results[doc["flow"]] = doc
    assert results, f"flows.mjs ran no flow: {done.stderr[-2000:]}"
    return results


@pytest.mark.parametrize("flow", FLOWS)
def test_flow(flow_results: dict[str, dict], flow: str) -> None:
    result = flow_results.get(flow)
    assert result is not None, f"flow {flow} did not run"
    assert result["ok"], result.get("error")


def test_report_says_which_sources_it_lacks(tmp_path: Path) -> None:
    store, _sources = make_store(tmp_path)
    made = subprocess.run(
        [*CLI, "report", "2", "--store", str(store.root), "-o", str(tmp_path / "r.html")],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "the report has no source for src/leak.cc: pass --src DIR" in made.stderr


def test_short_names_match_cli(flow_results: dict[str, dict]) -> None:
    """The UI's shortener (ui/src/names.ts) says what the CLI's says, name for name."""
    shown = flow_results["short_names"]["shown"]
    assert shown["short"] == [elide_templates(n) for n in shown["names"]]
    assert shown["hostile"] == {"shown": elide_templates(HOSTILE), "full": HOSTILE}
