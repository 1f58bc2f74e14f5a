"""Missed-vectorization findings from clang's remarks about hot loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers.missed_vectorization import advice_for, missed_loops, pointer_chase
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


# Lua 5.5's linked-list walks (lstring.c, ltable.c), which GCC 12 reported as missed
# vectorisation ("control flow in loop", "number of iterations cannot be computed"):
INTERN = """  for (ts = *list; ts != NULL; ts = ts->u.hnext) {
    if (l == cast_uint(ts->shrlen) &&
        (memcmp(str, getshrstr(ts), l * sizeof(char)) == 0)) {
      return ts;
    }
  }"""
REMOVE = """  while (*p != ts)  /* find previous element */
    p = &(*p)->u.hnext;"""
REHASH = """    while (p) {  /* for each string in the list */
      TString *hnext = p->u.hnext;  /* save next */
      unsigned int h = lmod(p->hash, nsize);  /* new position */
      p->u.hnext = vect[h];  /* chain it into array */
      vect[h] = p;
      p = hnext;
    }"""


GETSHORTSTR = """  for (;;) {  /* check whether 'key' is somewhere in the chain */
    if (keyisshrstr(n) && eqshrstr(keystrval(n), key))
      return gval(n);  /* that's it */
    else {
      int nx = gnext(n);
      if (nx == 0)
        return &absentkey;  /* not found */
      n += nx;
    }
  }"""


def test_a_linked_list_walk_is_a_pointer_chase() -> None:
    assert pointer_chase(INTERN) and pointer_chase(REMOVE) and pointer_chase(REHASH)
    assert pointer_chase(GETSHORTSTR)
    assert not pointer_chase("for (i = 0; i < n; i++) { if (a[i] == k) return i; }")
    assert not pointer_chase("while (p < end) { sum += p->v; p = p + 1; }")
    assert not pointer_chase("for (i = 0; i < n; i++) { d = abs(x); s += d; }")
    assert not pointer_chase("for (;;) { if (p->next == q) break; q = p->prev; p++; }")


def test_a_pointer_chasing_loop_is_not_reported(tmp_path: Path) -> None:
    """No compiler vectorises a loop whose next address the loop loads: reporting it
    asked to 'simplify the loop body' of four of Lua's hottest loops."""
    source = tmp_path / "lstring.c"
    source.write_text("\n" * 9 + INTERN + "\n" * 8 + REHASH + "\n")  # lines 10-15, 23-29
    unit = UnitReport(
        unit=TranslationUnit(source, ["-O2"], "defaults"),
        remarks=[
            Remark(str(source), 11, 5, False, "loop not vectorized", ["control flow in loop"]),
            Remark(str(source), 25, 5, False, "loop not vectorized", ["a reason"]),
        ],
        functions=[("internshrstr", 9, 20), ("tablerehash", 21, 35)],
        loops=[(10, 15), (23, 29)],
    )
    assert missed_loops(unit, None) == []


def test_a_loop_whose_reasons_name_no_change_is_estimated_low() -> None:
    """GCC's "control flow in loop" names no change to make: zlib's and bzip2's 11 such
    hot loops had none, so the loop's time counts 0.05, not 0.25 (a switch: 0.25)."""
    unit = report()
    unit.builder_remarks = [
        Remark(
            str(SOURCE), 30, 5, False, "loop not vectorized", ["control flow in loop"], "GCC 12"
        ),
        Remark(str(SOURCE), 10, 5, False, "loop not vectorized", ["switch statement"], "GCC 12"),
    ]
    hot = HotCode(100.0, {("loops.cc", 11): 40.0, ("loops.cc", 31): 40.0}, {})
    found = {f.line: f for f in missed_loops(unit, hot)}
    assert found[30].estimated_gain == pytest.approx(0.4 * 0.05) and found[30].confidence == 0.3
    assert "11 of 11" in found[30].gain_basis
    assert found[10].estimated_gain == pytest.approx(0.4 * 0.25) and found[10].confidence == 0.5
