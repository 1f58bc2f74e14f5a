"""Layouts of global struct variables under real valgrind: the `sessions` example's
global array and global struct against pahole, the parameter struct beside them,
the cache-layout finding naming the lone hot field of the array's elements, and
clang's DWARF 5 variable addresses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, layout_members, pahole_members, record_cache
from cli_runner import perfsleuth

from perfsleuth.cpu_cache_projections import globals

pytestmark = pytest.mark.integration

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "cache" / "sessions.c"


@pytest.fixture(scope="module")
def sessions_run(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """serve() of `sessions 1000 3000`, its first 200 calls."""
    store = tmp_path_factory.mktemp("cache-globals") / "store"
    return record_cache(store, examples_built / "sessions", "serve", "1000", "3000", first=True)


def layouts_by_variable(store: Path) -> dict[str, dict]:
    return {lay["variable"]: lay for lay in cache_doc(store)["layouts"]}


def nm_address(binary: Path, name: str) -> int:
    symbols = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True)
    return int(re.search(rf"^([0-9a-f]+) \w {name}$", symbols.stdout, re.M)[1], 16)  # type: ignore[index]


def test_parameter_and_globals_each_get_a_layout(sessions_run, examples_built):
    doc = cache_doc(sessions_run)
    owners = [(lay["variable"], lay["variable_kind"], lay["struct"]) for lay in doc["layouts"]]
    assert owners == [
        ("req", "parameter", "request"),
        ("sessions", "static", "session"),
        ("stats", "global", "server_stats"),
    ]
    assert doc["layout"] == doc["layouts"][0]
    assert doc["layout"]["parameter"] == "req"
    layouts = layouts_by_variable(sessions_run)
    assert {f["name"] for f in layouts["req"]["fields"] if f["hot"]} == {"session", "bytes", "time"}
    assert layouts["sessions"]["address"] == nm_address(examples_built / "sessions", "sessions")
    assert layouts["sessions"]["elements"] == 4096


def test_the_arrays_hot_fields_and_the_lone_one_on_a_cold_line(sessions_run):
    table = layouts_by_variable(sessions_run)["sessions"]
    assert {f["name"] for f in table["fields"] if f["hot"]} == {
        "state",
        "hits",
        "bytes",
        "last_seen",
    }
    assert table["visits"] == table["calls"] == 200
    assert 150 < table["elements_touched"] <= 200  # 200 random picks of 1000 sessions
    assert table["lines_touched_per_call"] == 2
    assert table["reorder"]["move"] == ["last_seen"]
    assert (table["reorder"]["from_line"], table["reorder"]["to_line"]) == (1, 0)
    stats = layouts_by_variable(sessions_run)["stats"]
    assert [f["name"] for f in stats["fields"] if f["hot"]] == ["requests"]


@pytest.mark.skipif(shutil.which("pahole") is None, reason="pahole (Debian dwarves) not installed")
@pytest.mark.parametrize(
    ("variable", "struct", "members"), [("sessions", "session", 11), ("stats", "server_stats", 3)]
)
def test_global_layouts_match_pahole(sessions_run, examples_built, variable, struct, members):
    theirs = pahole_members(examples_built / "sessions", struct)
    ours = layout_members(layouts_by_variable(sessions_run)[variable])
    assert len(theirs) == members
    assert ours == theirs


def test_the_finding_names_the_lone_hot_field_of_the_global_array(sessions_run):
    advice = json.loads(perfsleuth(sessions_run, "advise", "--format", "json").stdout)
    top = advice["findings"][:5]
    layout = [f for f in top if f["kind"] == "cache-layout"]
    assert layout, [f["title"] for f in top]
    assert layout[0]["details"]["field"] == "last_seen"
    assert layout[0]["details"]["variable"] == "static sessions[4096]"
    assert "last_seen" in layout[0]["title"] and "sessions" in layout[0]["title"]


def test_cache_show_text_names_each_variable(sessions_run):
    text = perfsleuth(sessions_run, "cache", "show").stdout
    assert "struct layout of *req (struct request, 16 B)" in text
    assert "struct layout of static sessions[4096] (struct session, 128 B per element" in text
    assert "struct layout of global stats (struct server_stats, 24 B)" in text


def test_clang_dwarf5_addresses_of_globals(tmp_path):
    """clang's DWARF 5 gives locations as DW_OP_addrx indexes into .debug_addr."""
    binary = tmp_path / "sessions-clang"
    subprocess.run(
        ["clang-16", "-O2", "-g", "-gdwarf-5", "-o", str(binary), str(SOURCE)], check=True
    )
    found = {v.name: v for v in globals.struct_variables(str(binary))}
    assert found["sessions"].address == nm_address(binary, "sessions")
    assert found["stats"].address == nm_address(binary, "stats")
    assert (found["sessions"].elements, found["sessions"].struct.size) == (4096, 128)


def test_without_debug_info_no_global_is_laid_out_and_the_layout_says_why(tmp_path):
    binary = tmp_path / "sessions-nodebug"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(SOURCE)], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "cache", "--function", "serve", "--max-calls", "20",
               "--", str(binary), "50", "40")  # fmt: skip
    doc = cache_doc(store)
    assert doc["layouts"] == []
    assert not doc["layout"]["available"]
    assert "has no DWARF debug info" in doc["layout"]["reason"]
