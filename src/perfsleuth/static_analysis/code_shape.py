"""What a build option could change in a piece of x86-64 machine code: how branchy
it is (PGO lays out and predicts branches from a training run) and how wide its
SIMD is (-march lets the compiler use the vector width and instructions the CPU
has: 128-bit SSE2 is all the x86-64 baseline allows).

Read from the hot functions' own code, so a build hint says what the binary shows
instead of a rule of thumb alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capstone import CS_ARCH_X86, CS_MODE_64, Cs, CsError
from capstone.x86 import X86_OP_REG

CPUINFO = Path("/proc/cpuinfo")
# Packed SIMD arithmetic: what a vectorised loop computes with. Moves, shuffles,
# unpacks and logic are left out: compilers use them on scalars too (`pxor xmm0, xmm0`
# to zero, punpck/pshufd to broadcast a byte for memset-like code).
PACKED_FLOAT = ("add", "sub", "mul", "div", "min", "max", "sqrt", "fmadd", "fmsub",
                "fnmadd", "fnmsub", "hadd", "hsub", "dp")  # fmt: skip
PACKED_INTEGER = ("padd", "psub", "pmul", "pmadd", "pavg", "pmin", "pmax", "psad", "pabs",
                  "pcmp")  # fmt: skip


@dataclass(frozen=True)
class CodeShape:
    instructions: int = 0
    branches: int = 0  # conditional jumps
    packed_xmm: int = 0  # packed SIMD arithmetic on 128-bit registers
    packed_wide: int = 0  # packed SIMD arithmetic on 256- or 512-bit registers

    def __add__(self, other: CodeShape) -> CodeShape:
        return CodeShape(
            self.instructions + other.instructions,
            self.branches + other.branches,
            self.packed_xmm + other.packed_xmm,
            self.packed_wide + other.packed_wide,
        )

    @property
    def branch_density(self) -> float:
        """Conditional jumps per instruction."""
        return self.branches / self.instructions if self.instructions else 0.0


def shape_of(code: bytes) -> CodeShape:
    """The shape of one function's machine code (empty when it does not decode)."""
    md = Cs(CS_ARCH_X86, CS_MODE_64)
    md.detail = True
    count = branches = narrow = wide = 0
    try:
        for insn in md.disasm(code, 0):
            count += 1
            branches += insn.mnemonic.startswith("j") and insn.mnemonic != "jmp"
            if _packed(insn.mnemonic):
                registers = [insn.reg_name(op.reg) for op in insn.operands if op.type == X86_OP_REG]
                if any(r.startswith(("ymm", "zmm")) for r in registers):
                    wide += 1
                elif any(r.startswith("xmm") for r in registers):
                    narrow += 1
    except CsError:
        return CodeShape()
    return CodeShape(count, branches, narrow, wide)


def _packed(mnemonic: str) -> bool:
    """Whether MNEMONIC is packed SIMD arithmetic (`addps`, `vfmadd231ps`, `paddd`)."""
    name = mnemonic.removeprefix("v")
    if name.endswith(("ps", "pd")) and name.startswith(PACKED_FLOAT):
        return True
    return name.startswith(PACKED_INTEGER)


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The flags of this machine's first CPU (avx2, avx512f, ...); empty if unknown."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())
