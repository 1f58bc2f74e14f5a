"""Missed-vectorization findings from clang's remarks about hot loops."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.analyzers.missed_vectorization import advice_for, missed_loops
from perfsleuth.static_analysis.compiler_remarks import Remark
from perfsleuth.static_analysis.source import HotCode, TranslationUnit
from perfsleuth.static_analysis.unit_report import UnitReport

SOURCE = Path("/src/loops.cc")


def report() -> UnitReport:
    return UnitReport(
        unit=TranslationUnit(SOURCE, ["-O2"], "defaults"),
        remarks=[
            Remark(
                str(SOURCE),
                10,
                5,
                False,
                "loop not vectorized",
                ["loop contains a switch statement"],
            ),
            Remark(
                str(SOURCE),
                20,
                5,
                True,
                "vectorized loop (vectorization width: 4, interleaved count: 2)",
            ),
            Remark(
                str(SOURCE),
                30,
                5,
                False,
                "loop not vectorized",
                ["call instruction cannot be vectorized"],
            ),
        ],
        functions=[("decode", 8, 14), ("sum", 18, 34)],
        loops=[(10, 13), (20, 21), (30, 32)],
    )


def test_only_hot_missed_loops_are_reported_with_the_reason_and_advice() -> None:
    hot = HotCode(
        100.0, {("loops.cc", 11): 40.0, ("loops.cc", 21): 50.0, ("loops.cc", 31): 1.0}, {}
    )
    [finding] = missed_loops(report(), hot)
    assert finding.kind == "missed-vectorization"
    assert (finding.function, finding.line) == ("decode", 10)
    assert finding.share == 0.4
    assert finding.evidence[0] == "clang: loop not vectorized: loop contains a switch statement"
    assert "lookup table" in finding.suggestion


def test_without_a_profile_every_missed_loop_is_reported() -> None:
    assert [f.line for f in missed_loops(report(), None)] == [10, 30]


def test_advice_follows_the_first_known_reason() -> None:
    remark = Remark(
        "x.c", 1, 1, False, "loop not vectorized", ["could not determine number of loop iterations"]
    )
    assert "trip count" in advice_for(remark)
    assert advice_for(Remark("x.c", 1, 1, False, "loop not vectorized")).startswith(
        "see the reasons"
    )


def test_gcc_remarks_of_a_gcc_binary_are_used_and_outer_loops_left_out() -> None:
    unit = report()
    unit.loops.append((40, 50))
    unit.builder_remarks = [
        Remark(
            str(SOURCE), 10, 5, False, "loop not vectorized", ["control flow in loop"], "GCC 12"
        ),
        Remark(str(SOURCE), 40, 5, False, "loop not vectorized", ["unsupported use"], "GCC 12"),
        Remark(str(SOURCE), 44, 5, False, "loop not vectorized", [], "GCC 12"),
        Remark(
            str(SOURCE),
            30,
            5,
            False,
            "loop not vectorized",
            ["loop nest containing two or more consecutive inner loops cannot be vectorized"],
            "GCC 12",
        ),
    ]
    unit.loops.append((44, 45))
    findings = missed_loops(unit, None)
    assert [(f.line, f.rule) for f in findings] == [
        (10, "missed-vectorization.gcc"),
        (44, "missed-vectorization.gcc"),
    ]
    assert findings[0].title.startswith("GCC 12 did not vectorize the loop at loops.cc:10")
