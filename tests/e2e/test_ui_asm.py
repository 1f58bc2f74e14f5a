"""The machine code of hot lines in the source view, in a real browser (asm_flow.mjs,
Debian's Chromium) against `perfsleuth serve` over real perf runs of
examples/bin/hotspots: the page shows what `perfsleuth annotate --asm` prints, and a
binary rebuilt since its run is refused with both build-ids; each instruction has its
share of the function's self samples (recorded and imported perf.data), the hottest
outlined, and a run stored without sample addresses says why it has none. Screenshots
go to tests/artifacts/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from cli_runner import perfsleuth
from ui_serve import CLI, flow_results, served

from perfsleuth.store.runs import Store

ROOT = Path(__file__).resolve().parents[2]
RUN, CHANGED_RUN, CACHED_RUN, IMPORTED_RUN, OLD_RUN = "1", "2", "3", "4", "5"
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
    data = base / "perf.data"
    hotspots = str(examples_built / "hotspots")
    subprocess.run(
        ["perf", "record", "-q", "-g", "-o", str(data), hotspots, "1000000"],
        check=True, capture_output=True,
    )  # fmt: skip
    perfsleuth(store, "import", str(data))
    perfsleuth(store, "record", "--", str(examples_built / "hotspots"), "1000000")
    forget_sample_addresses(store, OLD_RUN)
    return store


def forget_sample_addresses(store: Path, run: str) -> None:
    """Makes RUN what a run stored before perfsleuth kept sample addresses looks like."""
    with duckdb.connect(str(Store(store).db)) as con:
        con.execute("DELETE FROM documents WHERE run_id = ? AND kind = 'leaf_costs'", [int(run)])


@pytest.fixture(scope="module")
def shown(store: Path) -> dict[str, dict]:
    with served(store) as url:
        script = Path(__file__).with_name("asm_flow.mjs")
        return flow_results(script, url, RUN, CHANGED_RUN, CACHED_RUN, OLD_RUN, FUNCTION)


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
    hottest = hottest_instruction(code)
    held = [row["line"] for row in code["lines"] if hottest in row["instructions"]]
    assert [line for line, row in drawn.items() if row["open"]] == held
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
    share = f"{100 * first['share']:.1f}%"
    row = rf"^\s+{re.escape(share)}\s+{first['address']:#x}  {re.escape(first['text'])}$"
    assert re.search(row, text, re.M)


def test_no_serious_accessibility_violation(shown: dict[str, dict]) -> None:
    assert shown["accessibility"] == []


def hottest_instruction(code: dict) -> dict:
    return max((i for row in code["lines"] for i in row["instructions"]), key=lambda i: i["share"])


def self_share(store: Path, run: str) -> float:
    rows = json.loads(perfsleuth(store, "top", run, "-n", "0", "--format", "json").stdout)["rows"]
    return next(row["self"] for row in rows if row["function"] == FUNCTION)


@pytest.mark.parametrize("run", [RUN, IMPORTED_RUN])
def test_instruction_costs_add_up_to_the_function_self_samples(store: Path, run: str) -> None:
    code = annotate_asm(store, run)
    assert code["counts"] == "instruction" and code["no_cost_reason"] is None
    # the table's weight of mix's leaf instructions is mix's self cost in the profile
    assert code["function_self"] == pytest.approx(self_share(store, run), rel=1e-9)
    shares = [i["share"] for row in code["lines"] for i in row["instructions"]]
    # every line of mix is shown (3 < HOT_LINES) and each of its samples has one address
    # on a line the line table places it on; a sample on code the line table gives to no
    # hot line of mix is the only loss
    assert 0.9 <= sum(shares) <= 1 + 1e-9
    by_line = {row["line"]: sum(i["share"] for i in row["instructions"]) for row in code["lines"]}
    for row in code["lines"]:
        assert by_line[row["line"]] <= row["self"] / code["function_self"] + 1e-9


def loops_of(binary: str, symbol: str) -> list[tuple[int, int]]:
    """(target, branch) address ranges of SYMBOL's backward jumps, per objdump."""
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", binary],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    loops = []
    for m in re.finditer(r"^\s*([0-9a-f]+):\s+j\w+\s+([0-9a-f]+) <", listing, re.M):
        at, target = int(m[1], 16), int(m[2], 16)
        if target <= at:
            loops.append((target, at))
    return loops


def test_the_hottest_instruction_is_outlined_and_in_a_loop(
    shown: dict[str, dict], store: Path
) -> None:
    code = annotate_asm(store, RUN)
    hottest = hottest_instruction(code)
    rows = shown["hot_line_code"]["rows"]
    assert [a for row in rows for a in row["hottest"]] == [hottest["address"]]
    loops = loops_of(code["read_from"], hottest["symbol"])
    assert any(start <= hottest["address"] <= end for start, end in loops), (hottest, loops)
    drawn = {row["line"]: row for row in rows}
    for row in code["lines"]:
        page = drawn[row["line"]]
        for insn, share, width in zip(
            row["instructions"], page["shares"], page["bars"], strict=True
        ):
            assert abs(float(share.removesuffix("%")) - 100 * insn["share"]) <= 0.051
            assert abs(float(width.removesuffix("%")) - 100 * insn["share"]) <= 0.051
    assert "cost per instruction" in shown["hot_line_code"]["notice"]


def test_a_run_without_sample_addresses_says_why(shown: dict[str, dict], store: Path) -> None:
    code = annotate_asm(store, OLD_RUN)
    assert code["counts"] == "line" and "stored before" in code["no_cost_reason"]
    page = shown["older_run"]
    assert f"no cost per instruction: {code['no_cost_reason']}" in page["notice"]
    assert page["rows"] and all(share is None for row in page["rows"] for share in row["shares"])
    assert not any(row["hottest"] for row in page["rows"])
