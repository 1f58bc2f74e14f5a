"""The aliasing-write and missed-vectorization analyzers on a profile: hot units only,
notes for units that do not compile or cannot be found."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, aliasing_write, missed_vectorization
from perfsleuth.analyzers.aliasing_write import build_finding, no_cost_seen
from perfsleuth.cli import main
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.model.run import RunInfo
from perfsleuth.static_analysis.machine_code import Instruction, LoopCode
from perfsleuth.static_analysis.source import TranslationUnit
from perfsleuth.static_analysis.unit_analysis import analyse_unit

pytestmark = pytest.mark.integration

MARKS = Path(__file__).resolve().parents[1] / "fixtures" / "straight_line_marks.c"
MARKS_MAIN = """typedef unsigned char BYTE;
struct Codes { BYTE* table; unsigned pos; int kind; };
int mark(struct Codes* c);
BYTE* copy_pairs(BYTE* op, const BYTE* ip, int n);
int main(int argc, char** argv) {
    BYTE table[8] = {0};
    struct Codes c = {table, 2, argc};
    copy_pairs(table, (const BYTE*)argv[0], 4);
    return mark(&c) + table[argc];
}
"""

GOOD = """#include <stddef.h>
struct S { unsigned char* p; size_t n; };
void fill(struct S* s) {
    for (size_t i = 0; i < s->n; i++) s->p[i] = 7;
}
long sum(const long* a, size_t n) {
    long t = 0;
    for (size_t i = 0; i < n; i++) { if (a[i] > 3) break; t += a[i]; }
    return t;
}
"""


def context(tmp_path: Path, frames: list[tuple[Frame, float]]) -> Context:
    builder = ProfileBuilder()
    for frame, weight in frames:
        builder.add([frame], weight)
    return Context(profile=builder.build(), run=RunInfo(), src_roots=[tmp_path])


def test_findings_carry_the_loop_share_and_the_compiler_verdict(tmp_path: Path) -> None:
    (tmp_path / "good.c").write_text(GOOD)
    ctx = context(
        tmp_path,
        [
            (Frame("fill", "prog", "/build/good.c", 4), 60.0),
            (Frame("sum", "prog", "/build/good.c", 8), 30.0),
            (Frame("main", "prog", "/build/main.c", 3), 10.0),
        ],
    )
    [aliasing] = aliasing_write.analyze(ctx)
    assert (aliasing.function, aliasing.line, aliasing.share) == ("fill", 4, 0.6)
    assert aliasing.evidence[1].startswith("clang: loop not vectorized")
    assert aliasing.details["flags_origin"] == "defaults"
    [missed] = missed_vectorization.analyze(ctx)
    assert (missed.function, missed.line, missed.share) == ("sum", 8, 0.3)
    assert missed.evidence[0].startswith("clang: loop not vectorized")
    assert any("main.c" in note and "--src" in note for note in ctx.notes)


def test_a_hot_unit_that_does_not_compile_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "bad.c").write_text("int f(void) { return missing_name; }\n")
    ctx = context(tmp_path, [(Frame("f", "prog", "/build/bad.c", 1), 1.0)])
    assert aliasing_write.analyze(ctx) == []
    [note] = ctx.notes
    assert "bad.c" in note and "does not compile" in note and "missing_name" in note


def test_a_unit_needing_a_define_its_debug_info_omits_says_what_to_pass(tmp_path: Path) -> None:
    """GCC's DW_AT_producer records no -D: bzip2.c, built with -DBZ_UNIX=1, "does not
    compile" with the recorded flags, which blamed the file. The note says why and what
    to pass."""
    source = tmp_path / "needs.c"
    source.write_text(
        "#if !NEEDED\n#error built with -DNEEDED=1\n#endif\nint f(void) { return 1; }\n"
    )
    binary = tmp_path / "needs.so"
    subprocess.run(
        ["gcc", "-O2", "-g", "-DNEEDED=1", "-shared", "-fPIC", "-o", str(binary), str(source)],
        check=True,
    )
    builder = ProfileBuilder()
    builder.add([Frame("f", binary.name, str(source), 4)], 1.0)
    ctx = Context(
        profile=builder.build(),
        run=RunInfo(),
        src_roots=[tmp_path],
        binaries=[{"path": str(binary)}],
    )
    aliasing_write.analyze(ctx)
    [note] = [n for n in ctx.notes if "needs.c" in n]
    assert "built with -DNEEDED=1" in note
    assert "debug info records, which hold no -D or -I: pass --compile-commands FILE" in note


HEADER = """#pragma once
#include <cstdint>
#include <string>
#include <vector>
__attribute__((noinline)) inline void spread(const std::string& in, std::vector<uint8_t>& out) {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i] & 31;
}
"""

MAIN = """#include "spread.hpp"
int main() {
    std::string s(100, 'a');
    std::vector<uint8_t> v(100);
    spread(s, v);
    return v[7];
}
"""


def test_a_hot_loop_in_a_project_header_is_found_through_its_unit(tmp_path: Path) -> None:
    (tmp_path / "spread.hpp").write_text(HEADER)
    (tmp_path / "main.cc").write_text(MAIN)
    binary = tmp_path / "prog"
    subprocess.run(
        ["g++", "-O2", "-g", "-std=c++20", "-o", str(binary), "main.cc"], cwd=tmp_path, check=True
    )
    ctx = context(tmp_path, [(Frame("spread", "prog", str(tmp_path / "spread.hpp"), 6), 1.0)])
    ctx.binaries = [{"path": str(binary), "build_id": ""}]
    [finding] = aliasing_write.analyze(ctx)
    assert Path(finding.file).name == "spread.hpp"
    assert finding.details["flags_origin"] == "DW_AT_producer"
    assert any("byte ptr [" in line for line in finding.evidence)


def test_the_number_of_deep_units_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "good.c").write_text(GOOD)
    frames = [(Frame("fill", "prog", "/build/good.c", 4), 1.0)]
    ctx = context(tmp_path, frames)
    ctx.options.deep_tus = 0
    assert aliasing_write.analyze(ctx) == []


@pytest.mark.parametrize("given", ["soon", "-1", "nan", "inf"])
def test_a_bad_budget_option_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    store = tmp_path / "store"
    assert main(["advise", "--store", str(store), f"--budget={given}"]) != 0
    error = capsys.readouterr().err
    assert error.startswith(f"perfsleuth: --budget {given}:") and "CPU seconds" in error
    assert not store.exists()


@pytest.mark.parametrize("given", ["many", "-1", "2.5"])
def test_a_bad_deep_tus_option_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    store = tmp_path / "store"
    assert main(["advise", "--store", str(store), f"--deep-tus={given}"]) != 0
    error = capsys.readouterr().err
    assert error.startswith(f"perfsleuth: --deep-tus {given}:") and "whole number" in error
    assert not store.exists()


def test_a_loop_whose_machine_code_reloads_nothing_is_not_a_finding(tmp_path: Path) -> None:
    """The source pattern alone is 0.9 here; the user's compiler's loop with a byte store
    but no load from an unchanged address says the pattern costs nothing."""
    (tmp_path / "good.c").write_text(GOOD)
    report = analyse_unit(TranslationUnit(tmp_path / "good.c", ["-O2"], "defaults"))
    [(match, remark)] = report.confirmed_matches()
    store = Instruction(0x10, "mov byte ptr [rcx + rax], 7", "good.c:4")
    quiet = LoopCode("fill", [store], byte_stores=[store], reloads=[])
    note = no_cost_seen(match, report, quiet, asm_in_binary=True)
    assert note.startswith("not reported: the loop at good.c:4 in fill")
    assert "the binary's code of the loop reloads nothing" in note
    loud = report.loop_code(match, None)
    assert loud is not None and loud.confirms_aliasing
    assert no_cost_seen(match, report, loud, asm_in_binary=False) == ""
    assert no_cost_seen(match, report, None, asm_in_binary=True) == ""  # no code: unknown
    assert build_finding(match, report, remark, loud, 0.5).confidence >= 0.9


# GCC 12 -O2 makes this shift a memmove (bzip2's MTF update); clang keeps the loop,
# reloading s->base[lno] after every byte.
SHIFT = """struct Mtf { unsigned char a[4096]; int base[16]; };

void shift(struct Mtf* s, int lno, int off) {
    int pp = s->base[lno] + off;
    while (pp > s->base[lno]) {
        s->a[pp] = s->a[pp - 1];
        pp--;
    }
}
"""


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_loop_its_compiler_made_a_call_is_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiler: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "shift.c").write_text(SHIFT)
    arguments = [compiler, "-O2", "-c", "shift.c"]
    entry = {"directory": str(tmp_path), "file": "shift.c", "arguments": arguments}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    ctx = context(tmp_path, [(Frame("shift", "prog", "/build/shift.c", 6), 90.0)])
    ctx.compile_commands = tmp_path / "compile_commands.json"
    findings = aliasing_write.analyze(ctx)
    if compiler == "clang":
        [finding] = findings
        assert finding.details["confirmed_by"]["machine_code"] == "clang build"
        return
    assert findings == []
    [note] = [n for n in ctx.notes if n.startswith("not reported")]
    assert "shift.c:5 in shift" in note
    assert "GCC 12's build of the unit has no machine loop for its lines" in note


def test_hot_straight_line_code_is_a_finding_only_where_the_binary_reloads(
    tmp_path: Path,
) -> None:
    """In the run's binary, `mark` loads c->kind again after its byte store; copy2's
    `*op` stays in a register in each copy inlined into copy_pairs' loop."""
    (tmp_path / "marks.c").write_text(MARKS.read_text())
    (tmp_path / "main.c").write_text(MARKS_MAIN)
    binary = tmp_path / "prog"
    build = ["gcc", "-O2", "-g", "-o", str(binary), "marks.c", "main.c"]
    subprocess.run(build, cwd=tmp_path, check=True)
    marks = str(tmp_path / "marks.c")
    ctx = context(
        tmp_path,
        [(Frame("mark", "prog", marks, 6), 40.0), (Frame("copy_pairs", "prog", marks, 13), 60.0)],
    )
    ctx.binaries = [{"path": str(binary), "build_id": ""}]
    [finding] = aliasing_write.analyze(ctx)
    assert (finding.function, finding.rule) == ("mark", "aliasing-write.straight-line")
    assert finding.details["confirmed_by"]["machine_code"] == "binary"
    [note] = [n for n in ctx.notes if n.startswith("not reported")]
    assert note.startswith("not reported: the straight-line code at marks.c:13 in copy2")
    assert "the binary's code of lines 13-14 loads no address again" in note
