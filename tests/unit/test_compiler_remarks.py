"""Parsing clang-16's loop-vectorize remarks (captured real output of the labelled set)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.static_analysis import compiler_remarks
from perfsleuth.static_analysis.compiler_remarks import (
    CompileError,
    CompileTooLong,
    first_error,
    optimizing_flags,
    parse_remarks,
    remark_for_loop,
)
from perfsleuth.static_analysis.source import TranslationUnit

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "clang16-loop-vectorize-remarks.txt"


def remarks():  # type: ignore[no-untyped-def]
    return parse_remarks(FIXTURE.read_text())


def test_a_missed_loop_carries_the_reasons_printed_before_it() -> None:
    loop = remark_for_loop(remarks(), Path("containers.cc"), 19, 24)
    assert loop is not None and not loop.vectorized
    assert loop.line == 19
    assert loop.reasons == ["could not determine number of loop iterations"]
    assert loop.memory_reason
    assert loop.describe() == (
        "clang: loop not vectorized: could not determine number of loop iterations"
    )


def test_a_reason_reported_in_a_header_belongs_to_the_next_loop() -> None:
    loop = remark_for_loop(remarks(), Path("containers.cc"), 63, 64)
    assert loop is not None
    assert loop.reasons == ["cannot identify array bounds"]


def test_vectorized_loops_are_recognised() -> None:
    loop = remark_for_loop(remarks(), Path("containers.cc"), 105, 106)
    assert loop is not None and loop.vectorized
    assert "vectorization width: 4" in loop.message


def test_a_cost_model_refusal_is_a_missed_loop_and_interleaving_notes_are_dropped() -> None:
    loop = remark_for_loop(remarks(), Path("pointers.c"), 100, 100)
    assert loop is not None and not loop.vectorized
    assert loop.reasons == ["the cost-model indicates that vectorization is not beneficial"]
    assert not loop.memory_reason
    assert all("interleaving" not in r.message for r in remarks())


def test_remarks_of_other_files_do_not_match_a_loop() -> None:
    assert remark_for_loop(remarks(), Path("elsewhere.cc"), 1, 1000) is None


def test_first_error_is_the_first_error_line() -> None:
    stderr = (
        "bad.c:1:21: warning: something\n"
        "bad.c:1:21: error: use of undeclared identifier 'undefined_thing'\n"
        "bad.c:2:1: error: second\n"
    )
    assert (
        first_error(stderr) == "bad.c:1:21: error: use of undeclared identifier 'undefined_thing'"
    )


def test_remarks_need_an_optimising_build() -> None:
    assert optimizing_flags(["-O0", "-std=c11"]) == ["-std=c11", "-O2"]
    assert optimizing_flags(["-O3", "-march=native"]) == ["-O3", "-march=native"]
    assert optimizing_flags(["-g"]) == ["-g", "-O2"]


def test_a_compiler_past_its_cpu_time_is_said_to_take_too_long(tmp_path: Path) -> None:
    """Bounded by CPU time, not wall time (a loaded machine would cut a fine compile
    short), and told apart from a unit that does not compile."""
    source = tmp_path / "big.c"
    source.write_text("int main(void) { return 0; }\n")
    spinning = ["sh", "-c", "while :; do :; done", "cc"]
    unit = TranslationUnit(source, [], "defaults", directory=tmp_path)
    with pytest.raises(CompileTooLong, match="used over 1 CPU-s on big.c"):
        compiler_remarks.run_compiler(spinning, unit, source, None, cpu_s=1)
    with pytest.raises(CompileError) as refused:
        compiler_remarks.run_compiler(["sh", "-c", "exit 1", "cc"], unit, source, None)
    assert not isinstance(refused.value, CompileTooLong)


def test_a_driver_whose_compiler_proper_its_cpu_limit_killed_took_too_long(
    tmp_path: Path,
) -> None:
    """g++ survives its cc1plus: it exits 1 saying "Killed signal terminated program
    cc1plus", which is a compile stopped at its bound, not a unit that does not compile."""
    source = tmp_path / "spin.cc"
    calls = "".join(f"static_assert(spin({k}) >= 0);\n" for k in range(400))
    source.write_text(
        "constexpr long spin(long k) {\n"
        "    long s = 0;\n"
        "    for (long i = 0; i < 100000; i++)\n"
        "        for (long j = 0; j < 10; j++) s += (i ^ j ^ k) & 1;\n"
        "    return s;\n"
        "}\n" + calls
    )
    unit = TranslationUnit(source, ["-O2", "-std=c++20"], "defaults", directory=tmp_path)
    with pytest.raises(CompileTooLong, match="g\\+\\+ used over 1 CPU-s on spin.cc"):
        compiler_remarks.run_compiler(["g++", "-O2", "-S", str(source)], unit, source, None, 1)


def test_the_words_of_a_driver_whose_compiler_was_killed() -> None:
    assert compiler_remarks.PROPER_KILLED.search(
        "g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n"
    )
    assert compiler_remarks.PROPER_KILLED.search(
        "g++: internal compiler error: CPU time limit exceeded signal terminated program cc1plus"
    )
    assert compiler_remarks.PROPER_KILLED.search(
        "clang: error: unable to execute command: CPU time limit exceeded\n"
    )
    assert not compiler_remarks.PROPER_KILLED.search(
        "spin.cc:3:1: error: 'Killed' was not declared"
    )
