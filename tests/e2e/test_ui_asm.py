"""The machine code of hot lines in the source view, in a real browser (asm_flow.mjs,
Debian's Chromium) against `perfsleuth serve` over real perf runs of
examples/bin/hotspots: the page shows what `perfsleuth annotate --asm` prints, and a
binary rebuilt since its run is refused with both build-ids. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_runner import perfsleuth
from ui_serve import CLI, flow_results, served

ROOT = Path(__file__).resolve().parents[2]
RUN, CHANGED_RUN, CACHED_RUN = "1", "2", "3"
FUNCTION = "mix"  # hotspots' always-inlined helper: its lines' code is in four functions
SOURCE = ROOT / "examples" / "hotspots" / "hotspots.c"

pytestmark = pytest.mark.integration


def gcc(out: Path, *flags: str) -> None:
    subprocess.run(["gcc", *flags, "-g", "-o", str(out), str(SOURCE)], check=True)


@pytest.fixture(scope="module")
def store(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run 1: hotspots as built. Run 2: a build of its own, recorded with perf's build-id
    cache in a HOME of its own (so no copy of it is kept where `serve` looks), then rebuilt
    at -O1. Run 3: a copy of hotspots rebuilt after its run: perf's cache still has it."""
    base = tmp_path_factory.mktemp("ui-asm")
    store = base / "store"
    perfsleuth(store, "record", "--", str(examples_built / "hotspots"), "1000000")
    changed = base / "changed" / "hotspots"
    changed.parent.mkdir()
    gcc(changed, "-O2", "-falign-functions=64")  # a build-id no perf cache holds
    home = base / "home"
    home.mkdir()
    subprocess.run(
        [*CLI, "record", "--store", str(store), "--", str(changed), "1000000"],
        check=True, capture_output=True, env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    gcc(changed, "-O1")
    cached = base / "cached" / "hotspots"
    cached.parent.mkdir()
    shutil.copy(examples_built / "hotspots", cached)
    perfsleuth(store, "record", "--", str(cached), "1000000")
    gcc(cached, "-O1")
    return store


@pytest.fixture(scope="module")
def shown(store: Path) -> dict[str, dict]:
    with served(store) as url:
        script = Path(__file__).with_name("asm_flow.mjs")
        return flow_results(script, url, RUN, CHANGED_RUN, CACHED_RUN, FUNCTION)


def annotate_asm(store: Path, run: str) -> dict:
    done = perfsleuth(store, "annotate", FUNCTION, run, "--asm", "--format", "json")
    (code,) = json.loads(done.stdout)["asm"]
    return code


def test_the_page_shows_the_instructions_annotate_asm_prints(
    shown: dict[str, dict], store: Path
) -> None:
    code = annotate_asm(store, RUN)
    drawn = {row["line"]: row for row in shown["hot_line_code"]["rows"]}
    assert sorted(drawn) == sorted(row["line"] for row in code["lines"])
    for row in code["lines"]:
        page = drawn[row["line"]]
        assert page["instructions"] == [
            [f"{insn['address']:#x}", insn["text"]] for insn in row["instructions"]
        ]
        symbols = list(dict.fromkeys(insn["symbol"] for insn in row["instructions"]))
        assert [s.removeprefix("in ") for s in page["symbols"]] == symbols
        assert page["summary"].startswith(f"machine code of line {row['line']}: ")
    assert [line for line, row in drawn.items() if row["open"]] == [code["lines"][0]["line"]]
    # mix is inlined into work and the three compute_* functions: code in each
    assert {"work", "compute_a"} <= {i["symbol"] for i in code["lines"][0]["instructions"]}
    assert f"build-id {code['build_id']}, as recorded" in shown["hot_line_code"]["notice"]


def test_a_rebuilt_binary_is_refused_on_the_page_and_by_the_cli(
    shown: dict[str, dict], store: Path
) -> None:
    page = shown["changed_binary"]
    code = annotate_asm(store, CHANGED_RUN)
    assert code["lines"] == []
    assert "changed since the run" in code["reason"]
    assert page["notice"] == f"No machine code for the hot lines: {code['reason']}"
    assert page["rows"] == 0 and page["lines"] > 0  # the source lines are still shown


def test_a_rebuilt_binary_perf_kept_a_copy_of_is_read_from_the_copy(
    shown: dict[str, dict], store: Path
) -> None:
    code = annotate_asm(store, CACHED_RUN)
    assert code["reason"] is None and code["lines"][0]["instructions"]
    assert code["read_from"] != code["binary"]
    assert "/.debug/.build-id/" in code["read_from"]
    assert f"read from the copy perf kept, {code['read_from']}" in shown["cached_binary"]["notice"]
    assert shown["cached_binary"]["rows"] == len(code["lines"])


def test_the_text_output_lists_each_hot_line_with_its_code(store: Path) -> None:
    text = perfsleuth(store, "annotate", FUNCTION, RUN, "--asm").stdout
    code = annotate_asm(store, RUN)
    assert f"machine code of the hot lines of {FUNCTION} {code['binary']}" in text
    first = code["lines"][0]["instructions"][0]
    assert re.search(rf"^\s+{first['address']:#x}  {re.escape(first['text'])}$", text, re.M)


def test_no_serious_accessibility_violation(shown: dict[str, dict]) -> None:
    assert shown["accessibility"] == []
