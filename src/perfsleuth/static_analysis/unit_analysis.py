"""The deep analysis of a translation unit: its source patterns (libclang), the
compiler's verdict on its loops (remarks) — GCC's when GCC built the binary, else
clang-16's — and their machine code, and which matches survive.

libclang parses the unit once; a compiler runs only when remarks are wanted (a
profile's hot loops, `lint --missed`, or a match to confirm), so most units of a
codebase cost one parse. GCC compiles a unit GCC built first; clang-16 then compiles
it too only where GCC's remarks do not answer (no remark at all, or none on a matched
loop): on a GCC-built C++ unit each compile costs seconds. A report is cached in
memory by unit, flags, modification time and hot lines, so the aliasing and
vectorisation analyzers share one analysis; codebase.py runs many units in worker
processes and unit_cache.py keeps their reports on disk.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from . import compiler_remarks
from .aliasing_patterns import HotLines, find_matches
from .clang_ast import outline
from .compile_db import include_folders
from .compiler_remarks import COMPILE_CPU_S, CompileError, CompileTooLong, Remark
from .cpu_limits import cpu_seconds
from .gcc_remarks import gcc_driver, gcc_remarks
from .source import HotCode, TranslationUnit, hot_units, parse
from .toolchain import toolchain_of
from .unit_cache import UnitCache
from .unit_report import UnitReport, code_of

SYSTEM_INCLUDE_FOLDERS = ("/usr/include", "/usr/local/include")


@dataclass(frozen=True)
class CompileLimits:
    """How far the compilers of one unit go: each at most `cpu_s` CPU seconds, and none
    past `deadline` on cpu_seconds()'s clock (the analyses' budget), though each is
    given a second; and whether they write an object (not when a binary holds the
    machine code, as in advise: they then stop at assembly)."""

    cpu_s: int = COMPILE_CPU_S
    deadline: float | None = None
    object_code: bool = True

    def next_compiler(self) -> tuple[int, bool]:
        """The CPU seconds the next compiler may use, and whether the budget set them."""
        if self.deadline is None:
            return self.cpu_s, False
        left = max(1, math.ceil(self.deadline - cpu_seconds()))
        return min(self.cpu_s, left), left < self.cpu_s


# A unit starts only with this much of the budget left: a C++ unit's parse alone takes
# a second or two, and libclang cannot be stopped midway.
MIN_START_S = 2.0
ReportKey = tuple[str, tuple[str, ...], str, float, HotLines | None, bool, bool]
_REPORTS: dict[ReportKey, UnitReport] = {}


def analyse_unit(
    unit: TranslationUnit,
    hot_lines: HotLines | None = None,
    all_remarks: bool = False,
    limits: CompileLimits = CompileLimits(),
) -> UnitReport:
    """Parse and match the unit (only functions holding hot_lines, when given), then
    have the compilers compile it for their remarks when they are wanted: for a
    profile's hot loops, for `all_remarks`, or to check a match; cached, so the
    aliasing and vectorisation analyzers share one analysis. A unit built with
    guessed flags that does not compile is tried once more with the common standard
    headers included."""
    mtime = unit.path.stat().st_mtime
    flags = tuple(unit.flags)
    key = (str(unit.path), flags, unit.producer, mtime, hot_lines, all_remarks, limits.object_code)
    if key not in _REPORTS:
        report = _analyse(unit, hot_lines, all_remarks, limits)
        if report.error and not report.too_long and unit.flags_origin == "defaults":
            retried = _analyse(unit.with_standard_includes(), hot_lines, all_remarks, limits)
            report = report if retried.error else retried
        _REPORTS[key] = report
    return _REPORTS[key]


def _analyse(
    unit: TranslationUnit, hot_lines: HotLines | None, all_remarks: bool, limits: CompileLimits
) -> UnitReport:
    """The source patterns first; the compilers only when remarks are wanted: most
    units of a codebase have no match and cost one parse."""
    started = time.process_time()
    report = UnitReport(unit)
    parsed = parse(unit)
    report.inputs = unit.inputs
    if parsed is None:
        report.error = does_not_compile(unit, unit.error)
        # a header added later lands in one of these: their times change
        report.inputs = [*unit.inputs, *search_folders(unit)]
        return report
    found = find_matches(parsed, unit.path, hot_lines, limits.deadline)
    if found.unread:
        searched = f"{found.read} of {found.read + found.unread} functions"
        _cut_short(report, f"the source search (after {searched})", None)
        report.seconds = time.process_time() - started
        return report
    report.matches, report.blocked = found.matches, found.blocked
    remarks_wanted = bool(report.matches) or hot_lines is not None or all_remarks
    # the loops only place the compiler's remarks
    report.functions, report.loops, report.chasing_loops = outline(
        parsed, unit.path, loops=remarks_wanted
    )
    del parsed  # a large unit's syntax tree is hundreds of MB
    if remarks_wanted:
        _compile(report, limits)
    report.seconds = time.process_time() - started
    return report


def search_folders(unit: TranslationUnit) -> list[str]:
    """The folders the unit's headers are looked up in: its own, those of its flags,
    and the system's."""
    folders = {str(unit.path.parent), *SYSTEM_INCLUDE_FOLDERS, *include_folders(unit.flags)}
    return sorted(folder for folder in folders if Path(folder).is_dir())


def _compile(report: UnitReport, limits: CompileLimits) -> None:
    """GCC's remarks when GCC built the unit, clang's where GCC's do not answer, and
    the machine code of the matched loops (from an object, when one is wanted)."""
    unit = report.unit
    with tempfile.TemporaryDirectory(prefix="perfsleuth-unit-") as tmp:
        gcc_obj, obj = Path(tmp) / "gcc.o", Path(tmp) / "unit.o"
        if unit.producer or unit.compiler:
            report.builder_remarks = _builder_remarks(report, gcc_obj, limits)
        if not report.error and _clang_wanted(report):
            _clang_remarks(report, obj, limits)
        if not report.error and report.matches and limits.object_code:
            # The machine code of the compiler that builds the unit: GCC's when it does
            # (with or without remarks: a loop it made a memmove call has none).
            if gcc_obj.is_file():
                obj, report.object_compiler = gcc_obj, toolchain_of(unit).name
            _read_object_code(report, obj)


def _builder_remarks(report: UnitReport, output: Path, limits: CompileLimits) -> list[Remark]:
    """GCC's remarks; none when GCC did not build the unit, or cannot compile it with
    the flags known or within its own CPU time (the finding then cites clang's verdict
    and machine code, and says so: what GCC left of `output` is not its build).
    Stopped by the budget, the report is cut short."""
    driver = gcc_driver(report.unit)
    if driver is None:
        return []
    report.compiled_by.append(Path(driver).name)
    seconds, by_budget = limits.next_compiler()
    try:
        return gcc_remarks(report.unit, None, output if limits.object_code else None, seconds)
    except CompileError as exc:
        if by_budget and isinstance(exc, CompileTooLong):
            _cut_short(report, Path(driver).name, exc)
        output.unlink(missing_ok=True)
        return []


def _clang_wanted(report: UnitReport) -> bool:
    """Does the unit need clang's remarks: GCC gave none, or none on a matched loop?"""
    if not report.builder_remarks:
        return True
    return any(
        report.remark_for(m.file, m.line, m.end_line, report.builder_remarks) is None
        for m in report.matches
    )


def _clang_remarks(report: UnitReport, output: Path, limits: CompileLimits) -> None:
    """clang-16's remarks into the report, or why it has none as its error."""
    clang = Path(compiler_remarks.clang_for(report.unit)).name
    report.compiled_by.append(clang)
    seconds, by_budget = limits.next_compiler()
    try:
        target = output if limits.object_code else None
        report.remarks = compiler_remarks.compile_unit(report.unit, None, target, seconds)[0]
    except CompileTooLong as exc:
        if by_budget:
            _cut_short(report, clang, exc)
        else:
            report.error = f"{exc} (the bound of one unit's analysis)"
            report.too_long = True
    except CompileError as exc:
        report.error = does_not_compile(report.unit, str(exc))


def does_not_compile(unit: TranslationUnit, error: str) -> str:
    """Why a unit was skipped. With the flags of its DW_AT_producer, the cause is often
    what GCC leaves out of it, -D and -I (bzip2.c needs -DBZ_UNIX=1: "expected function
    body after function declarator" blamed the file): say so, and what to pass."""
    said = f"it does not compile ({error})"
    if unit.flags_origin == "DW_AT_producer":
        said += PRODUCER_FLAGS
    return said


PRODUCER_FLAGS = (
    " with the flags its debug info records, which hold no -D or -I: pass "
    "--compile-commands FILE (bear, or CMake's CMAKE_EXPORT_COMPILE_COMMANDS)"
)


def skipped_notes(skipped: list[tuple[str, str]]) -> list[str]:
    """A note per (unit, why) skipped; the units that do not compile for want of the
    -D and -I GCC does not record, in one (brotli's advice had five such notes of three
    lines each, one a unit, all saying the same)."""
    same = [(name, why) for name, why in skipped if why.endswith(PRODUCER_FLAGS)]
    notes = [
        f"skipped {name}: {why}"
        for name, why in skipped
        if len(same) < 2 or (name, why) not in same
    ]
    if len(same) >= 2:
        first, why = same[0]
        error = why.removesuffix(PRODUCER_FLAGS).removeprefix("it does not compile ")
        flags = PRODUCER_FLAGS.replace("flags its", "flags their")
        notes.append(
            f"skipped {len(same)} units ({', '.join(name for name, _ in same)}): they do not "
            f"compile (first, {first}: {error.strip('()')}){flags}"
        )
    return notes


def _cut_short(report: UnitReport, stage: str, exc: CompileTooLong | None) -> None:
    """The budget stopped a compiler or the source search: the report has no verdict,
    and is not kept."""
    report.cut_short = stage
    report.error = f"{exc or stage} (cut short at the CPU budget of these analyses)"
    report.too_long = True


def _read_object_code(report: UnitReport, obj: Path) -> None:
    """The machine code the unit's build made of each match (a loop's machine loop, or
    its straight code when it has none; straight-line code's lines), for when there
    is no binary (lint) to read it from."""
    exe = obj.with_suffix(".exe")
    if not compiler_remarks.link_for_disassembly(report.unit, obj, exe):
        return
    for match in report.matches:
        if (code := code_of(exe, match)) is not None:
            report.object_loops[(match.file, match.line)] = code


@dataclass
class Budget:
    """The CPU seconds the analysis of a run may use (None: no bound), counted from
    `started` on cpu_seconds()'s clock, so the other analyzers' time counts too; what
    each deep unit used (shared by the analyzers: a second one reads the same units
    from the memory cache); and the run, for the notes' commands."""

    seconds: float | None = None
    started: float = field(default_factory=cpu_seconds)
    spent: dict[str, float] = field(default_factory=dict)
    run: str = "RUN"

    def used(self) -> float:
        return cpu_seconds() - self.started

    def allows(self, unit: str) -> bool:
        """Can the unit be read: it was, or MIN_START_S of the budget is left."""
        if self.seconds is None or unit in self.spent:
            return True
        return self.used() + MIN_START_S <= self.seconds

    def deadline(self) -> float | None:
        """When (on cpu_seconds()'s clock) the analysis must stop its compilers."""
        return None if self.seconds is None else self.started + self.seconds


def hot_unit_reports(
    hot: HotCode,
    binaries: list[dict],
    roots: list[Path],
    compile_commands: Path | None,
    limit: int,
    budget: Budget | None = None,
    cache: UnitCache | None = None,
) -> tuple[list[tuple[UnitReport, Path | None]], list[str]]:
    """The analysed hot units of a run (at most `limit`), each with its binary; and
    notes for missing source, units that do not compile, a missing clang, the units
    not started because the analyses had used the budget, and the one it cut short.
    A report kept in `cache` costs only its reading."""
    units, notes = hot_units(hot, binaries, roots, compile_commands, limit)
    budget = budget or Budget()
    reports, over_budget, skipped = [], [], []
    hot_lines = frozenset(hot.line_weight)
    for unit, binary in units:
        key = str(unit.path)
        if not budget.allows(key):
            over_budget.append(unit.path.name)
            continue
        started = cpu_seconds()
        limits = CompileLimits(deadline=budget.deadline(), object_code=binary is None)
        try:
            report = _cached_analysis(unit, hot_lines, limits, cache)
        except UserError as missing_tool:
            notes.append(f"source and compiler analysis of hot loops skipped: {missing_tool}")
            break
        budget.spent.setdefault(key, cpu_seconds() - started)
        if report.cut_short:
            notes.append(cut_short_note(report, budget))
        elif report.error:
            skipped.append((unit.path.name, report.error))
        else:
            reports.append((report, binary))
    notes += skipped_notes(skipped)
    if over_budget:
        notes.append(budget_note(over_budget, budget))
    return reports, notes


def _cached_analysis(
    unit: TranslationUnit, hot_lines: HotLines, limits: CompileLimits, cache: UnitCache | None
) -> UnitReport:
    """The unit's report from `cache` when its files are unchanged, else analysed (and kept)."""
    report = cache.get(unit, False, hot_lines, limits.object_code) if cache else None
    if report is None:
        report = analyse_unit(unit, hot_lines, limits=limits)
        if cache:
            cache.put(report, False, hot_lines, limits.object_code)
    return report


def budget_note(skipped: list[str], budget: Budget) -> str:
    """What the budget left out, and how to have it read."""
    count = f"{len(skipped)} hot unit{'s' if len(skipped) > 1 else ''}"
    units = f"{len(budget.spent)} unit{'s' if len(budget.spent) != 1 else ''}"
    # the same words from each analyzer that asks (ctx.notes keeps a note once)
    spent = (
        f"{sum(budget.spent.values()):.1f} s of it spent on {units}"
        if budget.spent
        else f"the other analyzers left under the {MIN_START_S:g} s of it a unit needs to start"
    )
    return (
        f"{count} not compiled for aliasing and missed vectorisation ({', '.join(skipped)}): "
        f"over the {budget.seconds:g} s CPU budget of the analysis ({spent}); "
        f"`perfsleuth advise {budget.run} --budget SECONDS` reads them"
    )


def cut_short_note(report: UnitReport, budget: Budget) -> str:
    """Which unit the budget stopped, and a budget that reads it whatever its
    compilers take (each stops at COMPILE_CPU_S anyway)."""
    seconds = budget.seconds or 0.0
    return (
        f"{report.unit.path.name} cut short: {report.cut_short} stopped at the {seconds:g} s "
        "CPU budget of the analysis, so its loops have no compiler verdict; "
        f"`perfsleuth advise {budget.run} --budget {math.ceil(seconds) + 2 * COMPILE_CPU_S}` "
        "reads it fully"
    )
