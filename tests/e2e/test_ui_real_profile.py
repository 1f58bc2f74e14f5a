"""The UI on real recordings (real_profile_flow.mjs, Debian's Chromium): g++ compiling a
header-heavy C++ file and a small one, recorded with DWARF stacks, opens with its flame graph's root
and hot paths on the first screen and fits a phone; the A/B an allocator finding
proposes (`env LD_PRELOAD=… map_alloc`) is the compare page's default pair."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import perfsleuth
from ui_serve import flow_results, served

pytestmark = pytest.mark.integration

MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
HEADERS = ["regex", "map", "unordered_map", "iostream", "algorithm", "functional", "future"]


@pytest.fixture(scope="module")
def shown(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("ui-real")
    source = base / "headers.cc"
    includes = "".join(f"#include <{h}>\n" for h in HEADERS)
    source.write_text(
        includes + 'int main() { std::regex r("a+b"); return std::regex_match("ab", r); }\n'
    )
    # a second unit: g++ runs a cc1plus for each, two processes sure to be sampled (the
    # driver itself mostly waits, and a loaded machine's recording may hold none of it)
    (base / "second.cc").write_text(
        "#include <map>\n#include <string>\n"
        'int f() { std::map<std::string, int> m; m["a"] = 1; return (int)m.size(); }\n'
    )
    store = base / "store"
    compile_both = f"cd {base} && exec g++ -O2 -c headers.cc second.cc"
    perfsleuth(store, "record", "--call-graph", "dwarf", "--", "sh", "-c", compile_both)
    plain = examples_built / "map_alloc"
    perfsleuth(store, "record", "--", str(plain))
    perfsleuth(store, "record", "--", "env", f"LD_PRELOAD={MIMALLOC}", str(plain))
    for k in range(2):  # imports made after them, of unknown programs
        folded = base / f"other{k}.folded"
        folded.write_text("main;work 10\n")
        perfsleuth(store, "import", str(folded))
    with served(store) as url:
        script = Path(__file__).with_name("real_profile_flow.mjs")
        return flow_results(script, url, "1", "2", "3")


def test_a_deep_flame_graph_opens_on_its_root(shown: dict[str, dict]) -> None:
    opened = shown["deep_flame_opens_on_its_root"]["opened"]
    assert opened["icicle"] and opened["top"] < opened["viewport"]


def test_each_process_is_a_level_of_its_own(shown: dict[str, dict]) -> None:
    names = [p["name"] for p in shown["deep_flame_opens_on_its_root"]["processes"]]
    compilers = {n for n in names if n.startswith("cc1plus (")}
    assert len(compilers) == 2, names  # one level per process, told apart by pid


def test_pages_fit_a_phone(shown: dict[str, dict]) -> None:
    phone = shown["phone_layout"]
    assert phone["cells"] >= 10 and phone["pageWidth"] <= 390


def test_compare_takes_the_ab_a_finding_proposes(shown: dict[str, dict]) -> None:
    """`env LD_PRELOAD=… map_alloc` (what the allocator finding's `try` runs) compares
    with `map_alloc`; imports of unknown programs do not make the default pair."""
    assert shown["compare_the_proposed_ab"]["pair"] == {"before": "2", "after": "3"}


def test_wheel_zoom_drag_pan_and_next_match(shown: dict[str, dict]) -> None:
    flow = shown["wheel_drag_and_matches"]
    assert flow["zoomed"]["span"] < flow["whole"]["span"]
    assert flow["steps"][0] != flow["steps"][1]
