"""Missed-vectorization findings from clang's remarks about hot loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers.missed_vectorization import advice_for, missed_loops, pointer_chase
from perfsleuth.static_analysis.clang_ast import outline
from perfsleuth.static_analysis.compiler_remarks import Remark
from perfsleuth.static_analysis.source import HotCode, TranslationUnit, parse
from perfsleuth.static_analysis.unit_analysis import analyse_unit
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


# uthash's HASH_FIND in miniature: the chain walk is a macro, so the caller's one line
# holds the loop, and the step to the next entry goes through a cast of a loaded field
CHAIN = """#include <stddef.h>
struct handle { struct handle *next; int key; };
struct item { char name[20]; struct handle hh; };
#define ITEM_OF(h) ((struct item *)(void *)((char *)(h) - offsetof(struct item, hh)))
#define FIND(head, k, out) do { out = (head); while (out != NULL) { \\
    if (out->hh.key == (k)) break; \\
    if (out->hh.next != NULL) { out = (__typeof(out))ITEM_OF(out->hh.next); } \\
    else { out = NULL; } } } while (0)
struct item *find(struct item *head, int k) {
  struct item *out;
  FIND(head, k, out);
  return out;
}
void scale(int *a, const int *n) {
  for (int i = 0; i < *n; i++) a[i] *= 2;
}
"""


def test_a_chain_walk_inside_a_macro_is_not_reported(tmp_path: Path) -> None:
    """clang's reasons for uthash's HASH_FIND ("could not determine number of loop
    iterations") read as a fixable bound, for an estimated 0.25 of a lookup's time; the
    syntax tree shows the loop loads its next entry, so there is no finding. A bound
    behind a pointer the stores may change, the same reason, is still reported."""
    source = tmp_path / "chain.c"
    source.write_text(CHAIN)
    report = analyse_unit(TranslationUnit(source, ["-O2"], "defaults"), all_remarks=True)
    assert {r.line for r in report.remarks if not r.vectorized} == {11, 15}
    found = missed_loops(report, None)
    assert [f.line for f in found] == [15]
    assert "number of loop iterations" in found[0].evidence[0]
    assert found[0].suggestion.startswith("make the trip count computable")
    assert set(report.chasing_loops) == {(11, 11)}


# lines 2-5 chase (a list, a free list, records that give their length, a list through
# a local), 6-8 do not
STEPS = """struct node { struct node *next; int len; };
int walk(struct node *p) { int n = 0; while (p) { n++; p = p->next; } return n; }
int free_list(void **p) { int n = 0; while (p) { n++; p = *p; } return n; }
int skip(struct node *p, void *e) { int n = 0; while (p < e) { n++; p += p->len; } return n; }
int via(struct node *p) { int n = 0; while (p) { struct node *x = p->next; n++; p = x; } return n; }
int array(struct node *p, int n) { int s = 0; while (n--) { s += p->len; p = p + 1; } return s; }
int other(struct node *p, struct node *q, int n) { while (n--) q = p->next; return q != 0; }
int bump(char *p, char *end) { int n = 0; while (p < end) { n += *p; p++; } return n; }
"""


def test_the_syntax_tree_tells_a_chase_from_a_pointer_step(tmp_path: Path) -> None:
    source = tmp_path / "steps.c"
    source.write_text(STEPS)
    parsed = parse(TranslationUnit(source, ["-O2"], "defaults"))
    _, loops, chasing = outline(parsed, source)
    assert [line for line, _ in loops] == [2, 3, 4, 5, 6, 7, 8]
    assert [line for line, _ in chasing] == [2, 3, 4, 5]
