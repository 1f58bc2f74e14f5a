"""Parsing GCC 12's -fopt-info-vec-optimized-missed remarks (captured real output on
examples/aliasing/expand.cc and the labelled set's blockers.c and hoisted_write.c)."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.static_analysis.compiler_remarks import remark_for_loop
from perfsleuth.static_analysis.gcc_remarks import parse_gcc_remarks

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gcc12-opt-info-vec.txt"


def remark(file: str, first: int, last: int):  # type: ignore[no-untyped-def]
    remarks = parse_gcc_remarks(FIXTURE.read_text(), "GCC 12")
    return remark_for_loop(remarks, Path(file), first, last)


def test_a_missed_loop_carries_its_reasons_and_names_gcc() -> None:
    loop = remark("expand.cc", 17, 21)
    assert loop is not None and not loop.vectorized
    assert loop.reasons == ["number of iterations cannot be computed"]
    assert loop.memory_reason
    assert loop.describe() == "GCC 12: loop not vectorized: number of iterations cannot be computed"


def test_library_statements_reported_after_a_loop_are_not_its_reasons() -> None:
    # stl_vector.h's "statement can throw an exception" follows the loop at line 17
    assert "statement can throw an exception" not in remark("expand.cc", 17, 21).reasons


def test_a_reason_at_the_statement_at_fault_keeps_only_its_words() -> None:
    loop = remark("blockers.c", 38, 38)
    assert loop.reasons == ["number of iterations cannot be computed", "volatile type"]


def test_a_reason_at_a_declaration_before_the_loop_is_its_own() -> None:
    assert remark("hoisted_write.c", 29, 29).reasons == ["unsupported data-type size_t"]


def test_cost_and_control_flow_reasons() -> None:
    assert remark("hoisted_write.c", 21, 21).reasons == ["Loop costings not worthwhile"]
    assert remark("blockers.c", 49, 53).reasons == ["control flow in loop"]


def test_vectorized_loops_are_recognised() -> None:
    loop = remark("vec.c", 2, 2)
    assert loop is not None and loop.vectorized
    assert loop.describe() == "GCC 12: loop vectorized using 16 byte vectors"


def test_a_runtime_alias_check_gcc_would_need_is_a_reason_but_not_a_reload() -> None:
    # GCC says it of two pointers that may overlap (out and in.data() of a
    # string_view copy too), not of a value re-read: the machine code decides.
    loop = remark("containers.cc", 168, 168)
    assert "would need a runtime alias check" in loop.reasons
    assert not loop.memory_reason
