"""Build flags: hot code compiled without optimisation, and missed build options.

GCC records its flags in each compile unit's DW_AT_producer ("GNU C17 12.2.0
-march=x86-64 -g -O0"); with no -O at all GCC does not optimise. Clang records
only its version, so when the producer is silent the machine code is read
instead: unoptimised x86-64 code keeps every variable in a stack slot of the
frame (%rbp-relative loads and stores), optimised code keeps them in registers.
-march, LTO and PGO are reported only as low-confidence hints.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from ..binaries import STT_FUNC, binary_at
from ..model.findings import Finding
from ..model.profile import Profile
from . import Context
from .library_match import heaviest

Weights = defaultdict[str, float]

# Fraction of the time in unoptimised code that -O2 removes: measured on
# examples/advisor/o0_build (-O0 vs -O2), see docs/advisor.md.
O0_SAVING = 0.5
# PGO + LTO: 5-20%, high single digits typical (K2 case in the reference texts).
HINT_SAVING = 0.05
MIN_DSO_SHARE = 0.05
HINT_MIN_SHARE = 0.10
# %rbp-relative memory operands per instruction above which code is unoptimised.
STACK_SLOT_RATIO = 0.25
MACHINE_CODE_FUNCTIONS = 8
SYSTEM_PREFIXES = ("/usr/lib", "/lib", "/usr/libexec", "/usr/share")
_OPT_FLAG = re.compile(r"(?:^|\s)-O(\S*)")


@dataclass(frozen=True)
class CompileUnit:
    path: str  # the source file, absolute when the comp dir is known
    producer: str
    optimization: str | None  # "0", "g", "1", "2", "3", "s", "fast"; None = not recorded


def analyze(ctx: Context) -> list[Finding]:
    total = ctx.profile.total
    if total <= 0:
        return []
    findings = []
    dso_weight, file_weight, function_weight = _weights(ctx.profile)
    for dso, weight in dso_weight.items():
        path = _binary_path(ctx, dso)
        if path is None or weight / total < MIN_DSO_SHARE:
            continue
        units = compile_units(path)
        found = _unoptimized_by_producer(dso, units, weight, file_weight[dso], total)
        if found is None and not any(u.optimization for u in units):
            found = _unoptimized_by_machine_code(dso, path, function_weight[dso], total)
        if found is not None:
            found.function = found.function or heaviest(function_weight[dso], 1)[0][0]
            findings.append(found)
        elif weight / total >= HINT_MIN_SHARE:
            hint = _missing_options_hint(dso, units, weight / total)
            if hint is not None:
                findings.append(hint)
    return findings


def _weights(
    profile: Profile,
) -> tuple[Weights, dict[str, Weights], dict[str, Weights]]:
    """Self weight per DSO, per (DSO, source file) and per (DSO, function)."""
    per_dso: Weights = defaultdict(float)
    per_file: dict[str, Weights] = defaultdict(lambda: defaultdict(float))
    per_function: dict[str, Weights] = defaultdict(lambda: defaultdict(float))
    for stack, weight, _count, _thread, _state in profile.rows():
        physical = next((profile.frames[f] for f in stack if not profile.frames[f].inlined), None)
        if physical is None or physical.kernel:
            continue
        per_dso[physical.dso] += weight
        per_file[physical.dso][physical.file] += weight
        per_function[physical.dso][physical.function] += weight
    return per_dso, per_file, per_function


def _binary_path(ctx: Context, dso: str) -> str | None:
    """The user's own binary behind a DSO name; system libraries are not the user's to rebuild."""
    for binary in ctx.binaries:
        path = binary.get("path", "")
        if os.path.basename(path) == dso and os.path.isfile(path):
            return None if path.startswith(SYSTEM_PREFIXES) else path
    return None


def compile_units(path: str) -> tuple[CompileUnit, ...]:
    """The compiled (not assembled) units of a binary's DWARF, () without debug info."""
    binary = binary_at(path)
    return tuple(
        CompileUnit(unit.path, unit.producer, optimization_level(unit.producer))
        for unit in (binary.compile_units if binary else ())
        if unit.producer
        and not unit.producer.startswith("GNU AS")
        and not unit.name.endswith((".S", ".s"))
    )


def optimization_level(producer: str) -> str | None:
    """The -O level a producer string records; GCC without -O means -O0."""
    levels = _OPT_FLAG.findall(producer)
    if levels:
        return levels[-1] or "1"
    return "0" if producer.startswith("GNU ") else None


def _unoptimized_by_producer(
    dso: str, units: tuple[CompileUnit, ...], weight: float, files: Weights, total: float
) -> Finding | None:
    slow = [u for u in units if u.optimization in ("0", "g")]
    if not slow:
        return None
    if len(slow) == len(units):
        affected_weight = weight
    else:
        slow_paths = {u.path for u in slow}
        affected_weight = sum(w for f, w in files.items() if f in slow_paths)
    share = affected_weight / total
    if share < MIN_DSO_SHARE:
        return None
    hottest = _hottest_file(files, {u.path for u in slow})
    evidence = [f"{u.path}: {u.producer}" for u in slow[:5]]
    if len(slow) > 5:
        evidence.append(f"... and {len(slow) - 5} more unoptimised compile units")
    evidence.append(f"{100 * share:.1f}% of CPU time runs in these files")
    return _unoptimized_finding(
        dso, share, 0.9, evidence, [u.path for u in slow], hottest, "DW_AT_producer"
    )


def _hottest_file(files: Weights, candidates: set[str]) -> str:
    ranked = [f for f, _w in heaviest(files, len(files)) if f in candidates]
    return ranked[0] if ranked else (sorted(candidates)[0] if candidates else "")


def _unoptimized_finding(
    dso: str,
    share: float,
    confidence: float,
    evidence: list[str],
    files: list[str],
    hottest: str,
    basis: str,
) -> Finding:
    shown = ", ".join(os.path.basename(f) for f in files[:4]) + (" ..." if len(files) > 4 else "")
    return Finding(
        rule="build.unoptimized",
        kind="build-flags",
        title=f"{100 * share:.1f}% of CPU time is in {dso} code built without optimisation",
        share=share,
        estimated_gain=share * O0_SAVING,
        confidence=confidence,
        suggestion=(
            f"Rebuild {shown or dso} with -O2 -g (add -fno-omit-frame-pointer for cheap "
            "profiling stacks); -O0 keeps every variable in memory"
        ),
        dso=dso,
        file=hottest,
        evidence=evidence,
        fix={"flags": "-O2 -g", "files": files},
        details={"basis": basis, "saving": O0_SAVING},
    )


def _unoptimized_by_machine_code(
    dso: str, path: str, functions: Weights, total: float
) -> Finding | None:
    hot = [(name, w) for name, w in heaviest(functions, MACHINE_CODE_FUNCTIONS) if name]
    measured: list[tuple[str, float, float]] = []
    for name, w in hot:
        ratio_of_function = stack_slot_ratio(path, name)
        if ratio_of_function is not None:
            measured.append((name, w, ratio_of_function))
    weight = sum(w for _n, w, _r in measured)
    if not weight:
        return None
    ratio = sum(w * r for _n, w, r in measured) / weight
    slow_weight = sum(w for _n, w, r in measured if r >= STACK_SLOT_RATIO)
    share = slow_weight / total
    if ratio < STACK_SLOT_RATIO or share < MIN_DSO_SHARE:
        return None
    evidence = [
        f"{name}: {100 * r:.0f}% of instructions load or store a stack slot"
        for name, _w, r in measured[:4]
    ]
    evidence.append(
        "the compiler did not record its flags (clang: add -grecord-command-line to know for sure)"
    )
    finding = _unoptimized_finding(dso, share, 0.65, evidence, [path], "", "machine code")
    finding.function = measured[0][0]
    return finding


def stack_slot_ratio(path: str, function: str) -> float | None:
    """Fraction of a function's instructions with a %rbp-relative memory operand."""
    code = function_code(path, _identifier(function))
    if code is None:
        return None
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs
    from capstone.x86 import X86_OP_MEM, X86_REG_RBP

    disassembler = Cs(CS_ARCH_X86, CS_MODE_64)
    disassembler.detail = True
    count = slots = 0
    for insn in disassembler.disasm(code, 0):
        count += 1
        if any(op.type == X86_OP_MEM and op.mem.base == X86_REG_RBP for op in insn.operands):
            slots += 1
    return slots / count if count >= 8 else None


def _identifier(function: str) -> str:
    """`ns::Klass::step(int)` -> `step`."""
    head = function.split("(", 1)[0]
    head = re.sub(r"<[^<>]*>", "", head)
    return head.rsplit("::", 1)[-1].strip()


@lru_cache(maxsize=256)
def function_code(path: str, identifier: str) -> bytes | None:
    """The machine code of a function symbol (plain or mangled name) in an x86-64 ELF."""
    if not identifier:
        return None
    mangled = f"{len(identifier)}{identifier}"
    binary = binary_at(path)
    if binary is None or not binary.is_x86_64:
        return None
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    for sym in binary.symbols(table, frozenset({STT_FUNC})):
        if sym.size and (
            sym.name == identifier or (sym.name.startswith("_Z") and mangled in sym.name)
        ):
            return binary.code(sym.value, sym.size)
    return None


def _missing_options_hint(dso: str, units: tuple[CompileUnit, ...], share: float) -> Finding | None:
    known = [u for u in units if u.producer.startswith("GNU ")]
    if not known:
        return None
    missing = []
    if not any(re.search(r"-march=(?!x86-64(\s|$))", u.producer) for u in known):
        missing.append("-march=native (or the deployment CPU)")
    if not any("-flto" in u.producer or "GIMPLE" in u.producer for u in known):
        missing.append("-flto")
    if not any("-fprofile-use" in u.producer for u in known):
        missing.append("-fprofile-use (PGO)")
    if not missing:
        return None
    return Finding(
        rule="build.options-hint",
        kind="build-flags",
        title=f"{dso} is built without {', '.join(m.split(' ')[0] for m in missing)}",
        share=share,
        estimated_gain=share * HINT_SAVING,
        confidence=0.3,
        suggestion=(
            f"Worth a try, measure first: {', '.join(missing)}. PGO and LTO together often "
            "give 5-20%; -march only where the binary runs on known CPUs"
        ),
        dso=dso,
        file=known[0].path,
        evidence=[f"{known[0].path}: {known[0].producer}"],
        fix={"flags": " ".join(m.split(" ")[0] for m in missing)},
        details={"saving": HINT_SAVING},
    )
