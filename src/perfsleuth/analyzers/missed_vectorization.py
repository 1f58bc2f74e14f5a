"""Missed vectorisation: hot loops the compiler says it could not vectorise, with its
reasons — GCC's when GCC built the binary (its DW_AT_producer), else clang-16's.

Runs on the same hot translation units as the aliasing-write analyzer (and shares
its compilation). A loop the aliasing analyzer already reports is left to it: that
finding carries the compiler's verdict as evidence.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model.findings import Finding
from ..static_analysis.aliasing_patterns import Blocked
from ..static_analysis.compiler_remarks import Remark
from ..static_analysis.source import HotCode
from ..static_analysis.unit_report import UnitReport
from . import Context
from .aliasing_write import deep_reports

# Hot enough to be worth a look: the loop's share of the run.
MIN_SHARE = 0.02
CALL_ADVICE = (
    "a call in the body blocks vectorisation: inline it (make it visible, static inline) "
    "or hoist it out of the loop"
)
EXIT_ADVICE = (
    "an early exit (break, return, goto) stops vectorisation: find the exit index first, "
    "then run a loop without exits up to it"
)
VOLATILE_ADVICE = (
    "a volatile access in the body keeps the loop scalar: move it out of the loop "
    "if the device or signal semantics allow"
)
# The compiler's reason (clang's or GCC's) -> what to change; the first that matches wins.
ADVICE = (
    (
        "could not determine number of loop iterations",
        "make the trip count computable before the loop: keep the bound in a local "
        "(not behind a pointer or an accessor the body's stores might change)",
    ),
    (
        "number of iterations cannot be computed",
        "make the trip count computable before the loop: keep the bound in a local "
        "(not behind a pointer or an accessor the body's stores might change)",
    ),
    (
        "volatile type",
        VOLATILE_ADVICE,
    ),
    (
        "cannot identify array bounds",
        "index one base pointer held in a local (take .data() before the loop) so clang "
        "can check the accesses for overlap",
    ),
    (
        "unsafe dependent memory operations",
        "the stores may overlap the loads: copy to a separate buffer or mark pointers __restrict",
    ),
    (
        "call instruction cannot be vectorized",
        CALL_ADVICE,
    ),
    (
        "switch statement",
        "replace the switch with a lookup table or branch-free selects",
    ),
    (
        "control flow cannot be substituted for a select",
        "rewrite the branches in the body as conditional expressions on values",
    ),
    (
        "could not be identified as reduction",
        "a value carried from one iteration to the next is not a plain sum, product, min "
        "or max: compute it in a separate loop, or keep the vectorisable work apart",
    ),
    (
        "loop control flow is not understood",
        EXIT_ADVICE,
    ),
    (
        "cost-model indicates that vectorization is not beneficial",
        "clang judged vector code slower here; try -march=native (wider vectors) or "
        "simplify the body",
    ),
)
# What the source shows keeps a loop scalar (static_analysis/aliasing_patterns.Blocked.kind):
# how to say it, and what to change. It comes first: the compilers' reasons for such
# loops ("could not determine number of loop iterations") would point at the types.
BLOCKERS = {
    "call": ("calls `{what}`, which the compiler cannot see through", CALL_ADVICE),
    "exit": ("can leave early: `{what}`", EXIT_ADVICE),
    "volatile": ("makes a volatile access, `{what}`", VOLATILE_ADVICE),
    "atomic": (
        "makes an atomic access, `{what}`",
        "an atomic operation per iteration keeps the loop scalar: work on a local and "
        "update the atomic once after the loop",
    ),
    "asm": (
        "holds inline assembly, `{what}`",
        "inline assembly keeps the loop scalar: move it out of the loop, or use intrinsics",
    ),
}
# A loop that walks a linked structure: each iteration's pointer is loaded by the one
# before (`p = p->next`, `p = &(*p)->next`, or through a local `next = p->next; ...
# p = next;`). No compiler vectorises that, and no change to the body can make it.
_STEP = r"\b{v}\s*=(?!=)\s*&?\s*\(?\s*\*?\s*{w}\s*\)?\s*->"
# a local loaded from the pointer: `next = p->next`, or through a macro, `nx = gnext(n)`
_ASSIGN = re.compile(r"\b(\w+)\s*=(?!=)\s*(?:(\w+)\s*->|\w+\(\s*(\w+)\s*\))")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# GCC's reasons for not vectorising an outer loop (clang reports innermost loops only).
OUTER_LOOP_REASONS = ("loop nest containing", "multiple nested loops", "outer-loop")
DEFAULT_ADVICE = "see the reasons the compiler gave and simplify the loop body accordingly"
CONFIDENCE = 0.5
# A vectorised loop is typically 2-4x faster than the scalar one (saving half or
# more of its time), but a remark alone says the loop is scalar, not that it can
# be made vector: loop-carried values and calls often cannot be restructured.
# Counting about half of such loops as fixable gives 0.5 x 0.5.
GAIN_FRACTION = 0.25
# Loops whose reasons name no change to make (GCC's "control flow in loop", "unsupported
# use in stmt", "relevant stmt not supported", "not profitable") and whose source shows
# no blocker: in zlib 1.3.1 and bzip2 1.1.0, 11 of 11 such hot loops had no change that
# vectorises them (hash-chain inserts, bit output, sort partitions, an RLE state
# machine), and the one GCC vectorises at -O3, zlib's slide_hash, ran no faster.
UNEXPLAINED_GAIN_FRACTION = 0.05
UNEXPLAINED_CONFIDENCE = 0.3
GAIN_BASIS = (
    "a vectorised loop is typically 2-4x faster; about half of the loops a compiler names "
    "a reason for can be changed to vectorise: 0.25 of the loop's time"
)
UNEXPLAINED_BASIS = (
    "the compiler names no change to make and the source shows no blocker; in zlib and "
    "bzip2, 11 of 11 such hot loops could not be vectorised by any change: 0.05 of the "
    "loop's time"
)

# Compiles hot units within the analysis's CPU budget: run after the other analyzers.
READS_UNITS = True


def analyze(ctx: Context) -> list[Finding]:
    hot = ctx.hot_code
    findings = []
    for report, _binary in deep_reports(ctx, hot):
        findings.extend(missed_loops(report, hot))
    return findings


def missed_loops(report: UnitReport, hot: HotCode | None) -> list[Finding]:
    """A finding per loop of the unit the compiler did not vectorise (hot ones only
    when a profile is given) that no aliasing-write match already explains; the
    compiler is GCC when GCC built the binary and gave remarks, else clang."""
    explained = {(m.line, m.end_line) for m, _ in report.confirmed_matches()}
    blocked = {(b.line, b.end_line): b for b in report.blocked}
    findings = []
    seen: set[int] = set()  # a loop inlined in several places gets a remark per copy
    for remark in report.builder_remarks or report.remarks:
        if remark.vectorized or Path(remark.file).resolve() != report.unit.path.resolve():
            continue
        if remark.line in seen:
            continue
        seen.add(remark.line)
        if any(first <= remark.line <= last for first, last in explained):
            continue
        span = report.loop_at(remark.line)
        if _outer_loop(report, span, remark):
            continue  # GCC reports outer loops too: their inner loops are the work
        if span in report.chasing_loops or pointer_chase(_loop_text(report.unit.path, span)):
            continue
        share = hot.share(remark.file, *span) if hot is not None else 0.0
        if hot is not None and share < MIN_SHARE:
            continue
        findings.append(_finding(report, remark, share, blocked.get(span)))
    return findings


def _outer_loop(report: UnitReport, span: tuple[int, int], remark: Remark) -> bool:
    """Does the loop hold others — in its source, or inlined into it (GCC: "loop nest
    containing two or more consecutive inner loops")?"""
    if any(reason.startswith(OUTER_LOOP_REASONS) for reason in remark.reasons):
        return True
    first, last = span
    return any(first <= a and b <= last and (a, b) != span for a, b in report.loops)


def _loop_text(path: Path, span: tuple[int, int]) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[span[0] - 1 : span[1]])


def pointer_chase(loop: str) -> bool:
    """Does the loop's source step a pointer to what it points to (a linked list's
    walk), directly or through a local it loaded from it (`p = next`, `n += nx`)?"""
    text = _COMMENT.sub(" ", loop)
    for variable in set(re.findall(r"\b(\w+)\s*=(?!=)", text)):
        if re.search(_STEP.format(v=variable, w=variable), text):
            return True
    for local, pointer, argument in _ASSIGN.findall(text):
        variable = pointer or argument
        if local != variable and re.search(rf"\b{variable}\s*\+?=(?!=)\s*{local}\s*;", text):
            return True
    return False


def advice_for(remark: Remark) -> str:
    text = " ".join(remark.reasons)
    return next((advice for reason, advice in ADVICE if reason in text), DEFAULT_ADVICE)


def _source_reason(blocked: Blocked) -> tuple[str, str]:
    """(evidence line, advice) for a loop the source shows is kept scalar."""
    said, advice = BLOCKERS[blocked.kind]
    what = said.format(what=blocked.what)
    return (
        f"source: the loop at line {blocked.line} {what} (line {blocked.what_line}): it "
        "cannot be vectorised whatever the types, so its char-typed writes are not the cause",
        advice,
    )


def _finding(report: UnitReport, remark: Remark, share: float, blocked: Blocked | None) -> Finding:
    function = report.function_at(remark.line)
    evidence = [remark.describe()]
    advice = advice_for(remark)
    if blocked is not None:
        line, advice = _source_reason(blocked)
        evidence.insert(0, line)
    explained = advice != DEFAULT_ADVICE
    fraction = GAIN_FRACTION if explained else UNEXPLAINED_GAIN_FRACTION
    confidence = CONFIDENCE if remark.reasons else CONFIDENCE - 0.2
    return Finding(
        rule="missed-vectorization." + remark.compiler.split()[0].lower(),
        kind="missed-vectorization",
        title=f"{remark.compiler} did not vectorize the loop at "
        f"{report.unit.path.name}:{remark.line}" + (f" in {function}" if function else ""),
        share=round(share, 4),
        estimated_gain=round(share * fraction, 4),
        gain_basis=GAIN_BASIS if explained else UNEXPLAINED_BASIS,
        confidence=confidence if explained else min(confidence, UNEXPLAINED_CONFIDENCE),
        suggestion=advice,
        function=function,
        file=str(report.unit.path),
        line=remark.line,
        evidence=evidence
        + ([f"{share:.1%} of the run's samples are in this loop"] if share else []),
        details={
            "remark": remark.__dict__,
            "blocked_by": blocked.__dict__ if blocked else None,
            "flags": report.unit.flags,
            "flags_origin": report.unit.flags_origin,
        },
    )
