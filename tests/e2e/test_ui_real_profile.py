"""The UI on a deep real profile: g++ compiling a header-heavy C++ file, recorded with
DWARF stacks (real_profile_flow.mjs, Debian's Chromium): the flame graph opens with its
root and the hot paths on the first screen, and the pages fit a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import perfsleuth
from ui_serve import flow_results, served

pytestmark = pytest.mark.integration

HEADERS = ["regex", "map", "unordered_map", "iostream", "algorithm", "functional", "future"]


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("ui-real")
    source = base / "headers.cc"
    includes = "".join(f"#include <{h}>\n" for h in HEADERS)
    source.write_text(
        includes + 'int main() { std::regex r("a+b"); return std::regex_match("ab", r); }\n'
    )
    store = base / "store"
    perfsleuth(
        store,
        "record",
        "--call-graph",
        "dwarf",
        "--",
        "g++",
        "-O2",
        "-c",
        str(source),
        "-o",
        str(base / "headers.o"),
    )
    with served(store) as url:
        return flow_results(Path(__file__).with_name("real_profile_flow.mjs"), url, "1")


def test_a_deep_flame_graph_opens_on_its_root(shown: dict[str, dict]) -> None:
    opened = shown["deep_flame_opens_on_its_root"]["opened"]
    assert opened["icicle"] and opened["top"] < opened["viewport"]


def test_pages_fit_a_phone(shown: dict[str, dict]) -> None:
    phone = shown["phone_layout"]
    assert phone["cells"] >= 10 and phone["pageWidth"] <= 390
