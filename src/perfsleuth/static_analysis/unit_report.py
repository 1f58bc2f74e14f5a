"""What the source and the compilers said about one translation unit: the report
unit_analysis.py makes, unit_cache.py keeps on disk and the analyzers read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import compiler_remarks, machine_code
from .aliasing_patterns import AliasMatch, Blocked
from .compiler_remarks import Remark
from .source import TranslationUnit


@dataclass
class UnitReport:
    """Everything the source and the compiler said about one translation unit."""

    unit: TranslationUnit
    too_long: bool = False  # a compiler ran out of its CPU time on it: not worth a retry
    cut_short: str = ""  # the compiler or search the analyses' CPU budget stopped, if any
    compiled_by: list[str] = field(default_factory=list)  # the compilers run, in order
    matches: list[AliasMatch] = field(default_factory=list)
    # loops that would match but stay scalar for another reason (a call, an exit, ...)
    blocked: list[Blocked] = field(default_factory=list)
    remarks: list[Remark] = field(default_factory=list)
    # GCC's remarks when GCC built the unit into the binary (its DW_AT_producer)
    builder_remarks: list[Remark] = field(default_factory=list)
    functions: list[tuple[str, int, int]] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)
    # loops that set a pointer to what they load through it (clang_ast.chases)
    chasing_loops: list[tuple[int, int]] = field(default_factory=list)
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
        """The machine code of a match: of its loop (its straight code when the
        compiler left no machine loop there), or of its straight-line code; in the
        run's binary when there is one, else in the build of the unit."""
        if binary is not None:
            return code_of(binary, match)
        return self.object_loops.get((match.file, match.line))

    def confirmed_matches(self) -> list[tuple[AliasMatch, Remark | None]]:
        """Source matches clang does not refute."""
        return [(match, remark) for match, remark, refuted in self.verdicts() if not refuted]


def code_of(binary: Path, match: AliasMatch) -> machine_code.LoopCode | None:
    """The machine loop of a matched loop, else the straight code made of it; the
    code of a straight-line match's lines in every copy inlined."""
    span = (binary, match.file, match.line, match.end_line)
    if match.pattern == "straight-line":
        return machine_code.straight_line_code(*span)
    loop = machine_code.loop_code(*span, stack_reads=match.needs_compiler)
    return loop if loop is not None else machine_code.straight_code(*span)
