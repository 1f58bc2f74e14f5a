"""The deep analysis of a translation unit: its source patterns (libclang), clang-16's
verdict on its loops (remarks) — and GCC's, when GCC built the binary — and their
machine code, and which matches survive.

libclang parses the unit once; clang-16 compiles it only when its remarks are
wanted (a profile's hot loops, `lint --missed`, or a match to confirm), so most
units of a codebase cost one parse. A report is cached in memory by unit, flags,
modification time and hot lines, so the aliasing and vectorisation analyzers share
one analysis; codebase.py runs many units in worker processes and unit_cache.py
keeps their reports on disk.
"""

from __future__ import annotations

import math
import resource
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import UserError
from . import compiler_remarks, machine_code
from .aliasing_patterns import AliasMatch, Blocked, HotLines, find_matches
from .clang_ast import outline
from .compiler_remarks import COMPILE_CPU_S, CompileError, CompileTooLong, Remark
from .gcc_remarks import gcc_remarks
from .source import HotCode, TranslationUnit, hot_units, parse
from .toolchain import toolchain_of


@dataclass
class UnitReport:
    """Everything the source and the compiler said about one translation unit."""

    unit: TranslationUnit
    too_long: bool = False  # a compiler ran out of its CPU time on it: not worth a retry
    matches: list[AliasMatch] = field(default_factory=list)
    # loops that would match but stay scalar for another reason (a call, an exit, ...)
    blocked: list[Blocked] = field(default_factory=list)
    remarks: list[Remark] = field(default_factory=list)
    # GCC's remarks when GCC built the unit into the binary (its DW_AT_producer)
    builder_remarks: list[Remark] = field(default_factory=list)
    functions: list[tuple[str, int, int]] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)
    # (file, loop line) -> the loop in clang-16's build of the unit
    object_loops: dict[tuple[str, int], machine_code.LoopCode] = field(default_factory=dict)
    object_compiler: str = "clang-16"  # whose build object_loops were read from
    error: str = ""
    seconds: float = 0.0  # CPU seconds of this process (the compilers' are their own)
    inputs: list[str] = field(default_factory=list)  # the source and the files it includes

    def remark_for(
        self, file: str, first: int, last: int, remarks: list[Remark] | None = None
    ) -> Remark | None:
        """The remark (clang's, unless `remarks` are given) on the loop at first..last
        itself, not on a loop inside it."""
        inner = [(a, b) for a, b in self.loops if first < a and b <= last]
        own = [
            r
            for r in (self.remarks if remarks is None else remarks)
            if not any(a <= r.line <= b for a, b in inner)
        ]
        return compiler_remarks.remark_for_loop(own, Path(file), first, last)

    def verdict_for(self, match: AliasMatch) -> Remark | None:
        """The verdict of the compiler that built the binary on the match's loop:
        GCC's when GCC built it and said something about the loop, else clang's."""
        span = (match.file, match.line, match.end_line)
        return self.remark_for(*span, self.builder_remarks) or self.remark_for(*span)

    def loop_at(self, line: int) -> tuple[int, int]:
        """The innermost loop around a line (the line alone when none is known)."""
        around = [(b - a, (a, b)) for a, b in self.loops if a <= line <= b]
        return min(around)[1] if around else (line, line)

    def function_at(self, line: int) -> str:
        inside = [
            (last - first, name) for name, first, last in self.functions if first <= line <= last
        ]
        return min(inside)[1] if inside else ""

    def verdicts(self) -> list[tuple[AliasMatch, Remark | None, bool]]:
        """(match, clang's remark on its loop, whether clang refutes it). clang refutes
        a loop match by vectorising the loop anyway, and a read of a local object by
        not blaming memory when it fails (whether that object lives in memory depends
        on whether its address escaped, which only the compiler knows)."""
        found = []
        for match in self.matches:
            remark = self.verdict_for(match)
            vectorized = remark is not None and remark.vectorized
            refuted = match.pattern != "straight-line" and vectorized
            if match.needs_compiler and (remark is None or not remark.memory_reason):
                refuted = True
            found.append((match, remark, refuted))
        return found

    def loop_code(self, match: AliasMatch, binary: Path | None) -> machine_code.LoopCode | None:
        """The machine code of a matched loop (its straight code when the compiler left
        no machine loop there): in the run's binary when there is one, else in the
        build of the unit."""
        if binary is not None and match.pattern != "straight-line":
            return _code_of(binary, match)
        return self.object_loops.get((match.file, match.line))

    def confirmed_matches(self) -> list[tuple[AliasMatch, Remark | None]]:
        """Source matches clang does not refute."""
        return [(match, remark) for match, remark, refuted in self.verdicts() if not refuted]


INCLUDE_FOLDER_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter")
SYSTEM_INCLUDE_FOLDERS = ("/usr/include", "/usr/local/include")

_REPORTS: dict[tuple[str, tuple[str, ...], str, float, HotLines | None, bool], UnitReport] = {}


def analyse_unit(
    unit: TranslationUnit,
    hot_lines: HotLines | None = None,
    all_remarks: bool = False,
    cpu_s: int = COMPILE_CPU_S,
) -> UnitReport:
    """Parse and match the unit (only functions holding hot_lines, when given), then
    have clang compile it for its remarks when they are wanted: for a profile's hot
    loops, for `all_remarks`, or to check a match; cached, so the aliasing and
    vectorisation analyzers share one analysis. A unit built with guessed flags that
    does not compile is tried once more with the common standard headers included.
    Each compiler is stopped past cpu_s CPU seconds."""
    mtime = unit.path.stat().st_mtime
    key = (str(unit.path), tuple(unit.flags), unit.producer, mtime, hot_lines, all_remarks)
    if key not in _REPORTS:
        report = _analyse(unit, hot_lines, all_remarks, cpu_s)
        if report.error and not report.too_long and unit.flags_origin == "defaults":
            retried = _analyse(unit.with_standard_includes(), hot_lines, all_remarks, cpu_s)
            report = report if retried.error else retried
        _REPORTS[key] = report
    return _REPORTS[key]


def _analyse(
    unit: TranslationUnit, hot_lines: HotLines | None, all_remarks: bool, cpu_s: int
) -> UnitReport:
    """The source patterns first; the compilers (clang, and GCC when it built the
    binary) only when remarks are wanted: most units of a codebase have no match and
    cost one parse."""
    started = time.process_time()
    report = UnitReport(unit)
    parsed = parse(unit)
    report.inputs = unit.inputs
    if parsed is None:
        report.error = f"it does not compile ({unit.error})"
        # a header added later lands in one of these: their times change
        report.inputs = [*unit.inputs, *search_folders(unit)]
        return report
    found = find_matches(parsed, unit.path, hot_lines)
    report.matches, report.blocked = found.matches, found.blocked
    remarks_wanted = bool(report.matches) or hot_lines is not None or all_remarks
    # the loops only place the compiler's remarks
    report.functions, report.loops = outline(parsed, unit.path, loops=remarks_wanted)
    del parsed  # a large unit's syntax tree is hundreds of MB
    if remarks_wanted:
        _compile(report, cpu_s)
    report.seconds = time.process_time() - started
    return report


def search_folders(unit: TranslationUnit) -> list[str]:
    """The folders the unit's headers are looked up in: its own, those of its flags,
    and the system's."""
    folders = {str(unit.path.parent), *SYSTEM_INCLUDE_FOLDERS}
    for flag, following in zip(unit.flags, [*unit.flags[1:], ""], strict=True):
        if flag in INCLUDE_FOLDER_FLAGS:
            folders.add(following)
        elif flag.startswith("-I") and len(flag) > 2:
            folders.add(flag[2:])
    return sorted(folder for folder in folders if Path(folder).is_dir())


def _compile(report: UnitReport, cpu_s: int) -> None:
    """clang's remarks (and GCC's, when GCC built the unit), and the machine code of
    the matched loops."""
    unit = report.unit
    with tempfile.TemporaryDirectory(prefix="perfsleuth-unit-") as tmp:
        obj, gcc_obj = Path(tmp) / "unit.o", Path(tmp) / "gcc.o"
        with ThreadPoolExecutor(max_workers=2) as pool:
            building = (
                pool.submit(gcc_remarks, unit, None, gcc_obj, cpu_s)
                if unit.producer or unit.compiler
                else None
            )
            try:
                report.remarks = compiler_remarks.compile_unit(unit, None, obj, cpu_s)[0]
            except CompileTooLong as exc:
                report.error = f"{exc} (the bound of one unit's analysis)"
                report.too_long = True
            except CompileError as exc:
                report.error = f"it does not compile ({exc})"
            report.builder_remarks = _builder_remarks(building, gcc_obj)
        if not report.error and report.matches:
            # The machine code of the compiler that builds the unit: GCC's when it does
            # (with or without remarks: a loop it made a memmove call has none).
            if gcc_obj.is_file():
                obj, report.object_compiler = gcc_obj, toolchain_of(unit).name
            _read_object_code(report, obj)


def _builder_remarks(building: Future[list[Remark]] | None, obj: Path) -> list[Remark]:
    """GCC's remarks; none when GCC did not build the unit or cannot compile it with
    the flags known (the finding then cites clang's verdict and machine code, and says
    so: what GCC left of `obj` is not its build)."""
    try:
        return building.result() if building is not None else []
    except CompileError:
        obj.unlink(missing_ok=True)
        return []


def _read_object_code(report: UnitReport, obj: Path) -> None:
    """The machine code the unit's build made of each matched loop (its loop, or its
    straight code when it has none), for when there is no binary (lint) to read it from."""
    exe = obj.with_suffix(".exe")
    if not compiler_remarks.link_for_disassembly(report.unit, obj, exe):
        return
    for match in report.matches:
        if match.pattern != "straight-line" and (code := _code_of(exe, match)) is not None:
            report.object_loops[(match.file, match.line)] = code


def _code_of(binary: Path, match: AliasMatch) -> machine_code.LoopCode | None:
    """The machine loop of a matched loop, else the straight code made of it."""
    span = (binary, match.file, match.line, match.end_line)
    loop = machine_code.loop_code(*span, stack_reads=match.needs_compiler)
    return loop if loop is not None else machine_code.straight_code(*span)


def hot_unit_reports(
    hot: HotCode,
    binaries: list[dict],
    roots: list[Path],
    compile_commands: Path | None,
    limit: int,
    budget: float | None = None,
    spent: dict[str, float] | None = None,
    cache: ReportCache | None = None,
) -> tuple[list[tuple[UnitReport, Path | None]], list[str]]:
    """The analysed hot units of a run (at most `limit`), each with its binary; and
    notes for missing source, units that do not compile, a missing clang, and the
    units not started because the analyses had used `budget` CPU seconds. `spent`
    (unit -> CPU seconds) is shared by the callers, so that a second analyzer reads
    the same units, from the memory cache, and charges none twice; a report kept in
    `cache` costs only its reading."""
    units, notes = hot_units(hot, binaries, roots, compile_commands, limit)
    spent = {} if spent is None else spent
    reports, over_budget = [], []
    hot_lines = frozenset(hot.line_weight)
    for unit, binary in units:
        key = str(unit.path)
        if budget is not None and key not in spent and sum(spent.values()) >= budget:
            over_budget.append(unit.path.name)
            continue
        started = cpu_seconds()
        try:
            report = _cached_analysis(unit, hot_lines, compile_bound(budget, spent), cache)
        except UserError as missing_tool:
            notes.append(f"source and compiler analysis of hot loops skipped: {missing_tool}")
            break
        spent.setdefault(key, cpu_seconds() - started)
        if report.error:
            notes.append(f"skipped {unit.path.name}: {report.error}")
        else:
            reports.append((report, binary))
    if over_budget and budget is not None:
        notes.append(budget_note(over_budget, budget, spent))
    return reports, notes


class ReportCache(Protocol):
    """Reports kept while the files they read are unchanged (unit_cache.UnitCache)."""

    def get(
        self, unit: TranslationUnit, all_remarks: bool, hot_lines: HotLines | None = None
    ) -> UnitReport | None: ...

    def put(
        self, report: UnitReport, all_remarks: bool, hot_lines: HotLines | None = None
    ) -> None: ...


def _cached_analysis(
    unit: TranslationUnit, hot_lines: HotLines, cpu_s: int, cache: ReportCache | None
) -> UnitReport:
    """The unit's report from `cache` when its files are unchanged, else analysed (and kept)."""
    report = cache.get(unit, False, hot_lines) if cache else None
    if report is None:
        report = analyse_unit(unit, hot_lines, cpu_s=cpu_s)
        if cache:
            cache.put(report, False, hot_lines)
    return report


def budget_note(skipped: list[str], budget: float, spent: dict[str, float]) -> str:
    """What the budget left out, and how to have it read."""
    count = f"{len(skipped)} hot unit{'s' if len(skipped) > 1 else ''}"
    return (
        f"{count} not compiled for aliasing and missed vectorisation ({', '.join(skipped)}): "
        f"over the {budget:g} s CPU budget of these analyses ({sum(spent.values()):.1f} s "
        f"spent on {len(spent)}); `perfsleuth advise RUN --budget SECONDS` reads them"
    )


def compile_bound(budget: float | None, spent: dict[str, float]) -> int:
    """The CPU seconds each compiler of the next unit may use: what is left of the
    budget (at least one second), never over COMPILE_CPU_S."""
    if budget is None:
        return COMPILE_CPU_S
    return max(1, min(COMPILE_CPU_S, math.ceil(budget - sum(spent.values()))))


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the compilers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
