"""The machine code of a function's hot lines (views/disassembly.py) on a binary
built here: instructions from the run's own binary, or the reason there are none."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from asm_binary import HOT_LINE, WARM_LINE, profile

from perfsleuth.static_analysis.machine_code import line_instructions
from perfsleuth.views.disassembly import hot_line_code


def test_hot_lines_come_hottest_first_with_their_instructions(asm_program: Path) -> None:
    run = profile(asm_program)
    doc = hot_line_code(run, "mix", run.dsos)
    assert doc["reason"] is None
    assert doc["binary"] == str(asm_program) and doc["build_id"] == run.dsos[0]["build_id"]
    assert doc["counts"] == "line"
    assert [(row["line"], row["self"]) for row in doc["lines"]] == [
        (HOT_LINE, 300 / 450),
        (WARM_LINE, 100 / 450),
    ]
    for row in doc["lines"]:
        assert row["instructions"], f"line {row['line']} has code"
        addresses = [insn["address"] for insn in row["instructions"]]
        assert addresses == sorted(addresses)
        assert {insn["symbol"] for insn in row["instructions"]} == {"work"}
    # x ^ (x >> 29): a right shift by 29 is among the hot line's instructions
    assert any("shr" in i["text"] and "0x1d" in i["text"] for i in doc["lines"][0]["instructions"])


def test_instructions_are_the_ones_the_line_table_places_on_the_line(asm_program: Path) -> None:
    code = line_instructions(asm_program, "mix.c", [HOT_LINE, WARM_LINE])
    hot = {insn.address for _, insn in code[HOT_LINE]}
    warm = {insn.address for _, insn in code[WARM_LINE]}
    assert hot and warm and not hot & warm
    assert all(insn.where == f"mix.c:{HOT_LINE}" for _, insn in code[HOT_LINE])


def test_a_rebuilt_binary_is_refused_with_both_build_ids(asm_program: Path) -> None:
    run = profile(asm_program, build_id="00" * 20)
    doc = hot_line_code(run, "mix", run.dsos)
    assert doc["lines"] == []
    assert doc["reason"].startswith(f"the binary {asm_program} changed since the run (build-id ")
    assert f"the run recorded {'00' * 20}" in doc["reason"]


def test_a_binary_gone_says_so(asm_program: Path, tmp_path: Path) -> None:
    gone = tmp_path / "mix"
    shutil.copy(asm_program, gone)
    run = profile(gone)
    gone.unlink()
    doc = hot_line_code(run, "mix", run.dsos)
    assert doc["reason"] == f"the binary {gone} is gone; rebuild it or re-record"


def test_a_stripped_binary_says_what_it_lacks(asm_program: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "mix"
    subprocess.run(["strip", "-o", str(stripped), str(asm_program)], check=True)
    run = profile(stripped)
    doc = hot_line_code(run, "mix", run.dsos)
    assert doc["reason"].startswith(f"{stripped} is stripped (no symbols)")


def test_a_function_without_a_recorded_binary_says_so(asm_program: Path) -> None:
    run = profile(asm_program)
    doc = hot_line_code(run, "mix", [])
    assert doc["reason"] == "the run recorded no binary for mix (mix)"
    assert doc["binary"] is None
