"""GCC's own verdict on each loop, for code GCC built: its -fopt-info-vec remarks.

The compiler that builds a unit is named by its compile database entry or by
DW_AT_producer ("GNU C++17 12.2.0 -O2 ...", see toolchain.py). When that is GCC,
the verdict that counts is GCC's, not clang's: the unit is compiled again by the GCC
of the same major version (g++-12, else g++) with the unit's flags and
-fopt-info-vec-optimized-missed, and its remarks are read into the Remark shape of
compiler_remarks.py, the compiler named ("GCC 12").

GCC prints a loop's verdict first ("missed: couldn't vectorize loop" or "optimized:
loop vectorized using 16 byte vectors") and its reasons after it ("missed: not
vectorized: number of iterations cannot be computed."), at the loop's condition or
at the statement at fault; the basic-block vectoriser's remarks that come between
loops (statements of inlined library code) are not a loop's reasons.
"""

from __future__ import annotations

import re
from pathlib import Path

from .compiler_remarks import COMPILE_CPU_S, Remark, optimizing_flags, run_compiler
from .source import TranslationUnit
from .toolchain import toolchain_of

OPT_INFO_FLAG = "-fopt-info-vec-optimized-missed"
REMARK_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): (?P<kind>optimized|missed): (?P<message>.*)$"
)
# Passes that run only after the vectoriser (on RTL, and the late GIMPLE ivopts, slsr,
# store merging): turned off when no object is wanted, the remarks are the same for a
# sixth less CPU (K2's inst_var.cc, GCC 12: 352 remarks alike).
AFTER_VECTORISER_OFF = (
    "-fno-ivopts",
    "-fno-tree-slsr",
    "-fno-store-merging",
    "-fno-gcse",
    "-fno-cse-follow-jumps",
    "-fno-rerun-cse-after-loop",
    "-fno-if-conversion",
    "-fno-if-conversion2",
    "-fno-ree",
    "-fno-dse",
    "-fno-cprop-registers",
    "-fno-crossjumping",
    "-fno-caller-saves",
    "-fno-shrink-wrap",
    "-fira-region=one",
    "-fno-ira-hoist-pressure",
    "-fno-combine-stack-adjustments",
    "-fno-peephole2",
    "-fno-schedule-insns2",
    "-fno-reorder-blocks",
)
LOOP_MISSED = "couldn't vectorize loop"
LOOP_VECTORIZED = "loop vectorized"
REASON_PREFIX = "not vectorized: "
# Reasons GCC gives without that prefix.
BARE_REASONS = ("Loop costings not worthwhile", "would need a runtime alias check")


def gcc_remarks(
    tu: TranslationUnit,
    source: Path | None = None,
    output: Path | None = None,
    cpu_s: int = COMPILE_CPU_S,
) -> list[Remark]:
    """GCC's vectoriser remarks on the unit (or `source` in its place, its object
    written to `output`; without one, GCC stops at assembly, skips the passes after
    the vectoriser it can, and the assembler is not run), when GCC builds it and is
    installed; [] otherwise (the caller then has clang's). CompileError when it does
    not compile."""
    driver = gcc_driver(tu)
    if driver is None:
        return []
    source = source or tu.path
    code = ["-g1", "-c"] if output else [*AFTER_VECTORISER_OFF, "-S"]
    argv = [driver, *optimizing_flags(tu.flags), OPT_INFO_FLAG, *code, str(source)]
    return parse_gcc_remarks(run_compiler(argv, tu, source, output, cpu_s), toolchain_of(tu).name)


def gcc_driver(tu: TranslationUnit) -> str | None:
    """The installed GCC driver of the version that built the unit; None when GCC did
    not build it, or no GCC is installed."""
    toolchain = toolchain_of(tu)
    return toolchain.driver(tu.is_cxx) if toolchain.family == "gcc" else None


def parse_gcc_remarks(stderr: str, compiler: str) -> list[Remark]:
    """A Remark per loop verdict, with the reasons printed right after it."""
    remarks: list[Remark] = []
    current: Remark | None = None
    for line in stderr.splitlines():
        found = REMARK_LINE.match(line)
        if found is None:
            continue
        message = found["message"]
        where = (found["file"], int(found["line"]), int(found["column"]))
        if found["kind"] == "optimized" and message.startswith(LOOP_VECTORIZED):
            remarks.append(Remark(*where, True, message, [], compiler))
            current = None
        elif message == LOOP_MISSED:
            current = Remark(*where, False, "loop not vectorized", [], compiler)
            remarks.append(current)
        elif current is not None and _explains(current, where, message):
            current.reasons.append(_reason(message))
        else:
            current = None
    return remarks


def _explains(loop: Remark, where: tuple[str, int, int], message: str) -> bool:
    """Is this a reason for the loop just reported? Reasons follow their loop, in its
    file (at the loop, at the statement at fault, or at a variable's declaration); a
    statement of an inlined library function that the basic-block vectoriser reports
    next is not one."""
    return message.startswith((REASON_PREFIX, *BARE_REASONS)) and where[0] == loop.file


def _reason(message: str) -> str:
    """The reason without GCC's internal statement: "volatile type: *p_9(D) ={v} _3;"
    -> "volatile type"."""
    return message.removeprefix(REASON_PREFIX).split(": ")[0].rstrip(".")
