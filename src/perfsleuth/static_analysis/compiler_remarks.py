"""clang-16's own verdict on each loop: its loop-vectorize optimisation remarks
(GCC's, for binaries GCC built, are in gcc_remarks.py, in the same Remark shape).

Each compilation runs in its own temporary directory with a limit in CPU time (a
busy machine slows it, never cuts it short), so several can run in parallel and a
pathological unit cannot hang an analysis.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..binaries import binary_at
from ..errors import UserError
from .clang_flags import clang_accepted
from .cpu_limits import HANG_S, Hung, run_unless_hung
from .source import TranslationUnit

COMPILE_CPU_S = 120  # CPU seconds a compiler may spend on one unit (the machine may be loaded)
COMPILE_TIMEOUT_S = 4 * COMPILE_CPU_S  # wall seconds, only for the link of one object
REMARK_FLAGS = (
    "-Rpass=loop-vectorize",
    "-Rpass-missed=loop-vectorize",
    "-Rpass-analysis=loop-vectorize",
)
REMARK_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): remark: (?P<message>.*?)"
    r" \[-Rpass(?P<kind>-missed|-analysis)?=loop-vectorize\]$"
)
ERROR_LINE = re.compile(r"^(?:.+?:\d+:\d+: )?(?:fatal )?error: .*$")
# A driver (g++, clang -fno-integrated-cc1) whose compiler proper its CPU limit killed:
# "g++: fatal error: Killed signal terminated program cc1plus",
# "clang: error: unable to execute command: CPU time limit exceeded".
PROPER_KILLED = re.compile(
    r"error: (?:unable to execute command: )?(?:Killed|CPU time limit exceeded)"
    r"(?: signal terminated program|$)",
    re.M,
)
# Reasons for not vectorising that memory which may change explains: clang's, then GCC's.
MEMORY_REASONS = (
    "could not determine number of loop iterations",
    "cannot identify array bounds",
    "unsafe dependent memory operations",
    "number of iterations cannot be computed",
    "complicated access pattern",
    "can't determine dependence",
    "possible alias",
)
OPTIMIZING_LEVELS = ("-O1", "-O2", "-O3", "-Os", "-Oz", "-Ofast")
# Where link_for_disassembly puts the symbols a unit does not define: far above its
# code, within reach of a 32-bit displacement, a page apart.
UNDEFINED_AT = 0x4000_0000
UNDEFINED_APART = 0x1000


@dataclass
class Remark:
    """The vectoriser's verdict on one loop, with the reasons it gave."""

    file: str
    line: int
    column: int
    vectorized: bool
    message: str  # "vectorized loop (vectorization width: 16, ...)" or "loop not vectorized"
    reasons: list[str] = field(default_factory=list)  # "could not determine number of ..."
    compiler: str = "clang"  # whose verdict: "clang", or "GCC 12" for GCC's -fopt-info

    @property
    def memory_reason(self) -> bool:
        """Did clang give up for a reason memory that may change could explain?"""
        return any(reason in r for r in self.reasons for reason in MEMORY_REASONS)

    def describe(self) -> str:
        if self.vectorized or not self.reasons:
            return f"{self.compiler}: {self.message}"
        return f"{self.compiler}: loop not vectorized: " + "; ".join(dict.fromkeys(self.reasons))


class CompileError(Exception):
    """The unit does not compile with its flags; the message is the compiler's first error."""


class CompileTooLong(CompileError):
    """The compiler used up its CPU time (or wall time) on the unit: it was not refused."""


def cpu_limited(argv: list[str], cpu_s: int = COMPILE_CPU_S) -> list[str]:
    """argv killed past cpu_s of CPU time, whatever the load (util-linux's prlimit:
    the analyses run compilers from threads, where a preexec_fn is unsafe)."""
    prlimit = shutil.which("prlimit")
    return [prlimit, f"--cpu={cpu_s}", "--", *argv] if prlimit else argv


def clang_for(tu: TranslationUnit) -> str:
    name = "clang++-16" if tu.is_cxx else "clang-16"
    found = shutil.which(name) or shutil.which(name.removesuffix("-16"))
    if found is None:
        raise UserError(f"{name} not found; install it with `apt-get install clang-16`")
    return found


def optimizing_flags(flags: list[str]) -> list[str]:
    """The unit's flags, at -O2 when they do not optimise (remarks need the optimiser)."""
    levels = [f for f in flags if f.startswith("-O")]
    if levels and levels[-1] in OPTIMIZING_LEVELS:
        return list(flags)
    return [f for f in flags if not f.startswith("-O")] + ["-O2"]


def compile_unit(
    tu: TranslationUnit,
    source: Path | None = None,
    output: Path | None = None,
    cpu_s: int = COMPILE_CPU_S,
) -> tuple[list[Remark], str]:
    """Compile the unit (or `source` in its place) to `output` (without one, to
    assembly that is discarded: the assembler is not run); return its vectoriser
    remarks and the compiler's stderr."""
    source = source or tu.path
    argv = [
        clang_for(tu),
        *optimizing_flags(clang_accepted(tu.flags, tu.is_cxx)),
        "-gline-tables-only",
        "-fno-crash-diagnostics",  # a compile stopped at its CPU limit leaves no files in /tmp
        *REMARK_FLAGS,
        "-c" if output else "-S",
        str(source),
    ]
    stderr = run_compiler(argv, tu, source, output, cpu_s)
    return parse_remarks(stderr), stderr


def run_compiler(
    argv: list[str],
    tu: TranslationUnit,
    source: Path,
    output: Path | None,
    cpu_s: int = COMPILE_CPU_S,
) -> str:
    """Run a compiler on the unit, writing `output` (default: discarded), within
    cpu_s CPU seconds; its stderr, or a CompileError with its first error."""
    name = Path(argv[0]).name
    with tempfile.TemporaryDirectory(prefix="perfsleuth-cc-") as tmp:
        target = output or Path(tmp) / "unit.o"
        try:
            done = run_unless_hung(
                cpu_limited([*argv, "-o", str(target)], cpu_s), tu.directory or source.parent
            )
        except Hung as exc:
            raise CompileTooLong(
                f"{name} used no CPU for {HANG_S} s on {source.name} (hung)"
            ) from exc
    killed = done.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    if killed or (done.returncode != 0 and PROPER_KILLED.search(done.stderr)):
        raise CompileTooLong(f"{name} used over {cpu_s} CPU-s on {source.name}")
    if done.returncode != 0:
        raise CompileError(first_error(done.stderr) or f"{source}: {name} exited {done.returncode}")
    return done.stderr


def link_for_disassembly(tu: TranslationUnit, obj: Path, exe: Path) -> bool:
    """Link one object alone into an executable (no start files): inline and template
    code then has one address each, which a relocatable object does not give. Each
    symbol the unit uses but does not define is given an address of its own by a
    linker script: left undefined, every one is at 0, and the loads of two globals
    (`std::cout`, `rct::Z`) read as one address loaded twice, a reload that is not
    there; and the linker refuses a reference to a hidden symbol defined elsewhere (a
    library's internal functions, brotli's BROTLI_INTERNAL). False when it fails."""
    found = binary_at(obj)
    if found is None:
        return False
    undefined = sorted({s.name for s in found.symbols() if not s.defined and s.name})
    script = exe.with_suffix(".ld")
    script.write_text(
        "".join(
            f'"{name}" = {UNDEFINED_AT + n * UNDEFINED_APART:#x};\n'
            for n, name in enumerate(undefined)
        )
    )
    return _link(tu, [obj, script], exe)


def _link(tu: TranslationUnit, inputs: list[Path], exe: Path) -> bool:
    argv = [clang_for(tu), *map(str, inputs), "-o", str(exe), "-nostartfiles"]
    argv.append("-Wl,--unresolved-symbols=ignore-all,--no-warn-search-mismatch")
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and exe.is_file()


def first_error(stderr: str) -> str:
    return next((line for line in stderr.splitlines() if ERROR_LINE.match(line)), "")


def parse_remarks(stderr: str) -> list[Remark]:
    """Remarks in the order clang printed them; analysis remarks (the reasons)
    come before the 'loop not vectorized' remark they explain."""
    remarks: list[Remark] = []
    reasons: list[str] = []
    for line in stderr.splitlines():
        found = REMARK_LINE.match(line)
        if found is None:
            continue
        message = found["message"]
        if found["kind"] == "-analysis":
            reasons.append(message.removeprefix("loop not vectorized: "))
            continue
        if found["kind"] == "-missed" and not message.startswith("loop not vectorized"):
            if "vectorization is not beneficial" not in message:
                continue  # "interleaving is not beneficial" says nothing about vectorising
            reasons.append(message)
            message = "loop not vectorized"
        remarks.append(
            Remark(
                file=found["file"],
                line=int(found["line"]),
                column=int(found["column"]),
                vectorized=found["kind"] is None,
                message=message,
                reasons=reasons if found["kind"] == "-missed" else [],
            )
        )
        reasons = []
    return remarks


def remark_for_loop(remarks: list[Remark], path: Path, first: int, last: int) -> Remark | None:
    """The remark clang made about the loop spanning lines first..last of path."""
    inside = [r for r in remarks if Path(r.file).name == path.name and first <= r.line <= last]
    return min(inside, key=lambda r: (r.line, r.column), default=None)
