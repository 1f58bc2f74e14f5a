"""Which compilers read a hot unit, and the CPU budget of the analysis
(static_analysis/unit_analysis.py, run through the aliasing-write analyzer): GCC alone
for a unit GCC builds; a unit whose compiler the budget stops is cut short and named
with the command that reads it; no unit starts once the budget is spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, aliasing_write, missed_vectorization
from perfsleuth.analyzers.aliasing_write import deep_reports
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.model.run import RunInfo
from perfsleuth.static_analysis.source import hot_code

pytestmark = pytest.mark.integration

GOOD = """#include <cstddef>
struct S { unsigned char* p; std::size_t n; };
void fill(S* s) {
    for (std::size_t i = 0; i < s->n; i++) s->p[i] = 7;
}
"""
# Minutes of constant evaluation for GCC (each call is under its limits, and no two
# alike), none for libclang: GCC's compile is what the budget has to stop.
SPIN = (
    "#ifndef __clang__\n"
    "constexpr long spin(long k) {\n"
    "    long s = 0;\n"
    "    for (long i = 0; i < 100000; i++)\n"
    "        for (long j = 0; j < 10; j++) s += (i ^ j ^ k) & 1;\n"
    "    return s;\n"
    "}\n" + "".join(f"static_assert(spin({k}) >= 0);\n" for k in range(400)) + "#endif\n"
)


def gcc_built(tmp_path: Path, sources: dict[str, str], budget: float | None) -> Context:
    """A context whose hot units are `sources` (name -> text, each's `fill` loop
    hot), built by g++ as compile_commands.json says."""
    builder = ProfileBuilder()
    entries = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
        builder.add([Frame("fill", "prog", f"/build/{name}", text.count("\n") - 1)], 1.0)
        command = ["g++", "-O2", "-std=c++20", "-c", name]
        entries.append({"directory": str(tmp_path), "arguments": command, "file": name})
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
    ctx = Context(profile=builder.build(), run=RunInfo(id=7), src_roots=[tmp_path])
    ctx.compile_commands = tmp_path / "compile_commands.json"
    ctx.options.deep_budget = budget
    return ctx


@pytest.fixture(autouse=True)
def no_reports_kept_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache / "perfsleuth" / "units"


def test_a_unit_gcc_builds_is_compiled_by_gcc_alone(tmp_path: Path) -> None:
    """GCC's remarks answer for the matched loop: clang-16 is not run on the unit."""
    ctx = gcc_built(tmp_path, {"good.cc": GOOD}, None)
    [(report, _binary)] = deep_reports(ctx, hot_code(ctx.profile))
    assert len(report.compiled_by) == 1 and report.compiled_by[0].startswith("g++")
    assert report.builder_remarks and report.remarks == []
    [finding] = aliasing_write.analyze(ctx)
    assert finding.function == "fill" and finding.line == 4
    assert any(line.startswith("GCC") for line in finding.evidence)


def test_a_unit_nobody_says_gcc_built_is_compiled_by_clang(tmp_path: Path) -> None:
    (tmp_path / "good.cc").write_text(GOOD)
    builder = ProfileBuilder()
    builder.add([Frame("fill", "prog", "/build/good.cc", 4)], 1.0)
    ctx = Context(profile=builder.build(), run=RunInfo(), src_roots=[tmp_path])
    [(report, _binary)] = deep_reports(ctx, hot_code(ctx.profile))
    assert report.compiled_by == ["clang++-16"] and report.remarks
    assert report.builder_remarks == []


def test_the_budget_stops_a_compiler_and_starts_no_other_unit(
    tmp_path: Path, no_reports_kept_before: Path
) -> None:
    ctx = gcc_built(tmp_path, {"spin.cc": SPIN + GOOD, "other.cc": GOOD}, 3.0)
    assert aliasing_write.analyze(ctx) == []
    assert missed_vectorization.analyze(ctx) == []
    [cut] = [note for note in ctx.notes if "cut short" in note]
    assert cut.startswith("spin.cc cut short: g++")
    assert "`perfsleuth advise 7 --budget 243` reads it fully" in cut
    [over] = [note for note in ctx.notes if "not compiled" in note]
    assert over.startswith("1 hot unit not compiled") and "(other.cc)" in over
    assert list(ctx.deep_spent) == [str(tmp_path / "spin.cc")]
    assert deep_reports(ctx, hot_code(ctx.profile)) == []
    assert not no_reports_kept_before.exists()  # a cut unit is read again next time


def test_a_budget_of_nothing_starts_no_unit(tmp_path: Path) -> None:
    ctx = gcc_built(tmp_path, {"good.cc": GOOD, "other.cc": GOOD}, 0.0)
    assert aliasing_write.analyze(ctx) == []
    [note] = ctx.notes
    assert note.startswith("2 hot units not compiled") and "(good.cc, other.cc)" in note
    assert "(the other analyzers left under the 2 s of it a unit needs to start)" in note
    assert ctx.deep_spent == {}


def test_without_a_bound_every_unit_is_read_and_kept(
    tmp_path: Path, no_reports_kept_before: Path
) -> None:
    ctx = gcc_built(tmp_path, {"good.cc": GOOD, "other.cc": GOOD}, None)
    assert {Path(f.file).name for f in aliasing_write.analyze(ctx)} == {"good.cc", "other.cc"}
    assert not ctx.notes
    kept = [p for p in no_reports_kept_before.rglob("*") if p.is_file()]
    assert len(kept) == 2
