"""Aliasing writes: hot loops that reload memory because a char-typed write may alias it.

The matching is static_analysis/aliasing_patterns.py's (libclang), the compiler's and the
machine code's verdicts static_analysis/unit_analysis.py's; this analyzer runs them on the
run's hottest translation units and turns each surviving match into a finding,
ranked by the share of the run its code takes.
"""

from __future__ import annotations

from pathlib import Path

from ..model.findings import Finding
from ..static_analysis.aliasing_fixes import fixes_for, saving_for
from ..static_analysis.aliasing_patterns import AliasMatch
from ..static_analysis.compiler_remarks import Remark
from ..static_analysis.machine_code import LoopCode
from ..static_analysis.source import HotCode
from ..static_analysis.toolchain import toolchain_of
from ..static_analysis.unit_analysis import Budget, hot_unit_reports
from ..static_analysis.unit_cache import UnitCache
from ..static_analysis.unit_report import UnitReport
from . import Context

REMARK_CONFIRMS = 0.05
MACHINE_CODE_CONFIRMS = 0.08
# Compiles hot units within the analysis's CPU budget: run after the other analyzers.
READS_UNITS = True


def analyze(ctx: Context) -> list[Finding]:
    findings = []
    hot = ctx.hot_code
    seen: set[tuple[str, int]] = set()  # a header's loop is met in every unit including it
    for report, binary in deep_reports(ctx, hot):
        for match, remark, refuted in report.verdicts():
            share = hot.share(match.file, match.line, match.end_line)
            if share <= 0 or (match.file, match.line) in seen:
                continue
            seen.add((match.file, match.line))
            asm = report.loop_code(match, binary)
            # clang's verdict is about clang's code; the binary's own machine code
            # (perhaps from GCC) has the last word.
            if refuted and (asm is None or not asm.confirms_aliasing):
                continue
            in_binary = binary is not None
            quiet = no_cost_seen(match, report, asm, in_binary)
            if quiet:
                ctx.notes.append(quiet)
                continue
            findings.append(build_finding(match, report, remark, asm, share, in_binary))
    return findings


def deep_reports(ctx: Context, hot: HotCode) -> list[tuple[UnitReport, Path | None]]:
    """The analysed hot units of the run (at most ctx.options.deep_tus, within the
    analysis' ctx.options.deep_budget CPU seconds), each with its binary; what the user
    should know (missing source, units that do not compile, were over the budget or cut
    short by it, a missing clang) goes to ctx.notes, once, and the other analyzers still
    run. Reports are kept on disk (unit_cache.py): advising the run again, with a larger
    --budget, reuses them."""
    run = str(ctx.run.id or "RUN")
    budget = Budget(ctx.options.deep_budget, ctx.started_cpu, ctx.deep_spent, run)
    reports, notes = hot_unit_reports(
        hot,
        ctx.binaries or ctx.run.dsos,
        ctx.src_roots,
        ctx.compile_commands,
        ctx.options.deep_tus,
        budget,
        UnitCache(),
    )
    for note in notes:
        if note not in ctx.notes:
            ctx.notes.append(note)
    return reports


def build_finding(
    match: AliasMatch,
    report: UnitReport,
    remark: Remark | None,
    asm: LoopCode | None,
    share: float,
    asm_in_binary: bool = True,
) -> Finding:
    """One finding from a source match and, when known, the compiler's and the
    machine code's evidence about the same loop."""
    toolchain = toolchain_of(report.unit)
    built = report.object_compiler
    evidence, confidence = _evidence(match, remark, asm, asm_in_binary, built)
    confirmed_by = _confirmed_by(remark, asm, asm_in_binary, built)
    evidence.append(_confirmation(confirmed_by, built))
    if match.short_trip is not None:
        evidence.append(
            f"but the loop runs at most {match.short_trip} times per call: a few reloads, "
            "whatever the fix"
        )
    evidence.append(f"built by {toolchain.describe()}")
    if share:
        evidence.append(f"{share:.1%} of the run's samples are in this code")
    fixes = fixes_for(match, toolchain)
    where = "the loop" if match.pattern != "straight-line" else "the code"
    return Finding(
        rule=f"aliasing-write.{match.pattern}",
        kind="aliasing-write",
        title=(
            f"{match.write_type} write `{match.write}` makes {where} in "
            f"{match.function} reload `{match.read}`"
        ),
        share=round(share, 4),
        estimated_gain=round(share * saving_for(match, toolchain), 4),
        confidence=round(min(confidence, 0.98), 2),
        suggestion="; ".join(fixes),
        function=match.function,
        file=match.file,
        line=match.line,
        evidence=evidence,
        fix={"options": fixes, "file": match.file, "line": match.line},
        details={
            "match": match.to_json(),
            "compiler": toolchain.__dict__,
            "compiler_driver": report.unit.compiler,
            "producer": report.unit.producer,
            "flags": report.unit.flags,
            "flags_origin": report.unit.flags_origin,
            "directory": str(report.unit.directory or ""),
            "unit": str(report.unit.path),
            "remark": remark.__dict__ if remark else None,
            "confirmed_by": confirmed_by,
            "machine_code": [i.describe() for i in asm.instructions] if asm else [],
        },
    )


def _evidence(
    match: AliasMatch,
    remark: Remark | None,
    asm: LoopCode | None,
    asm_in_binary: bool,
    built: str,
) -> tuple[list[str], float]:
    """The evidence lines of the source, the compiler and the machine code, and the
    confidence they give together."""
    confidence = match.confidence
    evidence = [_source_evidence(match)]
    if remark is not None and not remark.vectorized:
        confidence += REMARK_CONFIRMS
        evidence.append(f"{remark.describe()} ({Path(remark.file).name}:{remark.line})")
    elif remark is not None:
        evidence.append(
            f"{remark.compiler} vectorizes this loop with the unit's flags ({remark.message}), "
            "but the binary's machine code reloads"
        )
    if asm is not None and asm.confirms_aliasing:
        confidence += MACHINE_CODE_CONFIRMS
        evidence.append(_machine_code_evidence(match, asm, asm_in_binary, built))
        evidence.extend(asm.evidence())
    return evidence, confidence


def _confirmed_by(
    remark: Remark | None, asm: LoopCode | None, asm_in_binary: bool, built: str
) -> dict[str, str | None]:
    """Which compiler's verdict and which machine code back the finding: the remark
    of the compiler that built the binary (GCC's when its DW_AT_producer says GCC,
    else clang's), and the reloads in the run's binary or in clang's build."""
    reloads = asm is not None and asm.confirms_aliasing
    return {
        "compiler": remark.compiler if remark is not None and not remark.vectorized else None,
        "machine_code": ("binary" if asm_in_binary else _build_label(built)) if reloads else None,
    }


def _build_label(built: str) -> str:
    return "clang build" if built.startswith("clang") else f"{built} build"


def _confirmation(confirmed_by: dict[str, str | None], built: str) -> str:
    parts = []
    if confirmed_by["compiler"]:
        parts.append(f"{confirmed_by['compiler']}'s vectoriser remark")
    if confirmed_by["machine_code"] == "binary":
        parts.append("the machine code of the run's binary")
    elif confirmed_by["machine_code"]:
        parts.append(f"the machine code of {built}'s build of the unit")
    if not parts:
        return "confirmed by no compiler: the source pattern alone"
    return "confirmed by " + " and ".join(parts)


def _machine_code_evidence(
    match: AliasMatch, asm: LoopCode, asm_in_binary: bool, built: str
) -> str:
    symbol = match.function if asm.function.startswith("_Z") else asm.function
    where = "" if asm_in_binary else f" ({built}'s build of the unit)"
    if match.pattern == "straight-line":
        return (
            f"machine code of {symbol}{where}: "
            f"{_count(asm.reloads, 'load')} of addresses loaded before its byte stores "
            f"({_count(asm.byte_stores, 'byte store')} on lines {match.line}-{match.end_line})"
        )
    if asm.straight:
        return (
            f"machine code of {symbol}{where}: no machine loop, but "
            f"{_count(asm.reloads, 'load')} of addresses loaded before a byte store "
            f"({_count(asm.byte_stores, 'byte store')} in {len(asm.instructions)} instructions "
            "of straight code: the loop unrolled)"
        )
    return (
        f"machine code of {symbol}{where}: {_count(asm.reloads, 'load')} from unchanged "
        f"addresses (the loop's, or the iteration's after a byte store) and "
        f"{_count(asm.byte_stores, 'byte store')} in a "
        f"{len(asm.instructions)}-instruction loop"
    )


def no_cost_seen(
    match: AliasMatch, report: UnitReport, asm: LoopCode | None, asm_in_binary: bool
) -> str:
    """Why the user's compiler's own code of a match shows that the pattern costs
    nothing — its loop reloads nothing (the compiler proved the write cannot reach the
    read, or read it once before the loop), or it has no machine loop and its straight
    code (unrolled stores, a memmove call) reloads nothing either; for straight-line
    code, no copy of its lines (one per place it is inlined) loads an address again
    after a byte store (the pointer is in a register) — as a note naming the code; ""
    when it may cost. The binary's code is the user's; a build of the unit speaks for
    the user when it is by their compiler."""
    toolchain = toolchain_of(report.unit)
    built = report.object_compiler
    own = asm_in_binary or built.lower().startswith(toolchain.family)
    if not own or asm is None or asm.reloads:
        return ""
    if match.pattern == "straight-line":
        return _straight_line_note(match, asm, asm_in_binary, built)
    if asm.straight:
        code = "the binary" if asm_in_binary else f"{built}'s build of the unit"
        calls = [f": {i.describe()}" for i in asm.instructions if i.text.startswith("call")]
        why = (
            f"{code} has no machine loop for its lines, and its straight code reloads "
            f"nothing (the loop became stores or a library call{calls[0] if calls else ''})"
        )
    else:
        code = "the binary's code" if asm_in_binary else f"{built}'s code (a build of the unit)"
        why = f"{code} of the loop reloads nothing"
    return (
        f"not reported: the loop at {Path(match.file).name}:{match.line} in "
        f"{match.function} matches an aliasing pattern (`{match.write}`, `{match.read}`), "
        f"but {why}: no cost seen"
    )


def _straight_line_note(match: AliasMatch, asm: LoopCode, asm_in_binary: bool, built: str) -> str:
    code = "the binary's code" if asm_in_binary else f"{built}'s code (a build of the unit)"
    why = (
        f"loads no address again after a byte store ({_count(asm.byte_stores, 'byte store')}"
        ", in every inlined copy)"
        if asm.byte_stores
        else "has no byte store (the bytes are stored together, or not at all)"
    )
    return (
        f"not reported: the straight-line code at {Path(match.file).name}:{match.line} in "
        f"{match.function} matches an aliasing pattern (`{match.write}`, `{match.read}`), "
        f"but {code} of lines {match.line}-{match.end_line} {why}: no cost seen"
    )


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _source_evidence(match: AliasMatch) -> str:
    if match.pattern == "straight-line":
        return (
            f"source: `{match.read}` is read again (line {match.read_line}) after "
            f"`{match.write}` writes through {match.write_type} (line {match.write_line})"
        )
    where = "condition" if match.pattern == "loop-condition" else "body"
    return (
        f"source: the loop at line {match.line} reads `{match.read}` in its {where} "
        f"(line {match.read_line}) and writes through {match.write_type}: "
        f"`{match.write}` (line {match.write_line})"
    )
