"""Build flags: hot code compiled without optimisation, and missed build options.

GCC records its flags in each compile unit's DW_AT_producer ("GNU C17 12.2.0
-march=x86-64 -g -O0"); with no -O at all GCC does not optimise. Clang records
only its version, so when the producer is silent the machine code is read
instead: unoptimised x86-64 code keeps every variable in a stack slot of the
frame (%rbp-relative loads and stores), optimised code keeps them in registers.
-march, LTO and PGO are hints, each with what the binary shows: the compilers in its
.comment section, whether its symbols have the shapes LTO leaves (`.lto_priv.N`,
a "GNU GIMPLE" producer), and the hot calls that cross translation units without
being inlined (a caller in one compile unit, its callee in another: only LTO can
inline those). -flto is suggested only where such calls are hot, and its estimate
is taken from their time.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache

from ..binaries import STT_FUNC, binary_at
from ..binaries.packaged import is_packaged
from ..model.counts import ExactCounts
from ..model.findings import Finding
from ..model.profile import Frame, Profile
from ..static_analysis.code_shape import CodeShape, cpu_flags, shape_of
from ..static_analysis.source import binary_path
from ..symbols.demangle import demangle_map
from . import Context
from .library_match import heaviest

Weights = defaultdict[str, float]

# Fraction of the time in unoptimised code that -O2 removes: measured on
# examples/advisor/o0_build (-O0 vs -O2), see docs/advisor.md.
O0_SAVING = 0.5
# PGO + LTO: 5-20%, high single digits typical (K2 case in the reference texts).
HINT_SAVING = 0.05
# Of the binary's time, what -fprofile-use saves beside -flto (added where both are
# proposed: K2's PGO+LTO measured 1.16x): K2 measured -fprofile-use 1.06x with 42% of its
# time in its own binary (0.13, `try build`), the reference post's K2 1.03x on about
# half (0.06); its hot code's conditional jumps (4.7%) would have scaled it to nothing.
PGO_SAVING = 0.1
HINT_RANGE = (0.0, 0.2)
# of the time in hot cross-unit calls and in their callers' own code, what inlining
# them saves: the calls, and what inlining enables (constant propagation, vectorising
# the caller's loop). Measured once: a loop calling another unit's one-line function,
# -flto 6.0x faster (0.83 of that time; tests/integration/test_build_flags_binaries.py)
LTO_SAVING = 0.5
LTO_RANGE = (0.1, 0.9)
# LTO_SAVING holds for calls into a callee small enough to inline: GCC -O2 inlines a
# function not declared inline up to ~15 of its instructions (max-inline-insns-auto;
# 30 at -O3), ~4 bytes each. Under calls into larger callees LTO saves less (what
# whole-program IPA, cloning and called-once inlining give): K2's hot cross-unit calls
# go into inout_t::operator= (644 bytes), static_safety_check_pgm (1175) and the like,
# 42% of its time, and -flto measured 1.10x (9.0%, `try build`): 0.21 of that time.
INLINABLE_BYTES = 128
LARGE_CALLEE_SAVING = 0.2
# how much of a caller's own time counts with its hot cross-unit calls, as a multiple
# of their time: the measured loop around a one-line call has 3.8 times the call's
# samples (the call's own instructions and its return land in the loop); a caller that
# calls out rarely (zlib's deflate_slow: 25% of the time, 0.01% in its calls into
# trees.c) has little for inlining to change, and -flto measured nothing there
CALLER_SHARE = 4.0
# a count run knows each call's count: a callee doing more of its own work per call
# than this is no inlining's to speed up (a call and its return are a few instructions,
# and what inlining enables in the caller runs once per call). bzip2's compressor calls
# BZ2_compressBlock (another unit) once per 900 kB block, 24 M instructions a call, 11%
# of the run: the hint said -flto, 16% in all; -flto measured 1.00x (-march 0.93x, PGO 0.96x)
MAX_OWN_PER_CALL = 10_000
MIN_CROSS_UNIT_SHARE = 0.05
LTO_SYMBOL = re.compile(r"\.lto_priv\.\d+$")
MIN_DSO_SHARE = 0.05
HINT_MIN_SHARE = 0.10
# %rbp-relative memory operands per instruction above which code is unoptimised.
STACK_SLOT_RATIO = 0.25
MACHINE_CODE_FUNCTIONS = 8
MIN_VECTOR_DENSITY = 0.02  # of a function's instructions packed SIMD (axpy's loop: 7.7%)
MIN_VECTOR_SHARE = 0.1  # of its binary's time
# conditional jumps per instruction from which hot code counts as branchy: Debian's
# gzip and sqlite3 are 10.5% and 9.1% over their whole text, a chain of character
# tests 21%, a vectorised loop with its scalar tail 11.5%, its constant-length clone 5.8%
BRANCHY = 0.15
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
            paths = {u.path for u in units}
            calls = call_counts(ctx.counts) if ctx.counts is not None else None
            every_call = cross_unit_calls(ctx.profile, dso, paths)
            crossing = frequent(every_call, calls)
            cross_share = min(weight, _with_callers(crossing, function_weight[dso])) / total
            small = frequent(into(every_call, inlinable_functions(path)), calls)
            shares = (cross_share, min(cross_share, sum(small.values()) / total))
            entries = entry_addresses(ctx.counts, dso)
            hot = hot_code_shape(path, function_weight[dso], entries)
            hint = _missing_options_hint(
                dso, path, hottest_first(path, units, function_weight[dso], entries),
                (weight / total, hot), crossing, shares, total,
            )  # fmt: skip
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
    """The user's own binary behind a DSO name (a count run's whole path or a sampled
    run's file name); system libraries are not the user's to rebuild."""
    path = binary_path(dso, ctx.binaries)
    # A package's files are not the user's to rebuild: /usr/bin/node (nodejs.org's build) was
    # told it is "built without -fprofile-use", its hot code V8's builtins and JIT code.
    if path is None or is_packaged(str(path)):
        return None
    return str(path)


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


def function_code_at(path: str, address: int) -> bytes | None:
    """The machine code of the function symbol holding `address` in an x86-64 ELF."""
    binary = binary_at(path)
    if binary is None or not binary.is_x86_64:
        return None
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    for sym in binary.symbols(table, frozenset({STT_FUNC})):
        if sym.size and sym.value <= address < sym.value + sym.size:
            return binary.code(sym.value, sym.size)
    return None


def cross_unit_calls(profile: Profile, dso: str, unit_paths: set[str]) -> Weights:
    """The callee's own time under each hot call from one compile unit of DSO into
    another that was not inlined ("caller (a.c) -> callee (b.c)"): the samples whose
    innermost function is the callee and whose next function is the caller, in
    another unit. Inlining a callee rewrites its code and its caller's, not what it
    calls: the time under a call into zlib's deflate (all of it in deflate_slow,
    deflate's own unit) is not LTO's to save."""
    home = home_units(profile, dso, unit_paths)
    calls: Weights = defaultdict(float)
    for stack, weight, _count, _thread, _state in profile.rows():
        physical = _innermost_two(profile.frames, stack)
        if physical is None:
            continue
        callee, caller = physical
        if callee.dso != dso or caller.dso != dso:
            continue
        callee_unit = home.get(callee.function, callee.file)
        caller_unit = home.get(caller.function, caller.file)
        if callee_unit in unit_paths and caller_unit in unit_paths and callee_unit != caller_unit:
            calls[
                f"{caller.function} ({os.path.basename(caller_unit)}) -> "
                f"{callee.function} ({os.path.basename(callee_unit)})"
            ] += weight
    return calls


def into(crossing: Weights, inlinable: frozenset[str]) -> Weights:
    """The cross-unit calls into `inlinable` callees (names without spaces), from one
    walk of the stacks for both (a second walk was a tenth of `advise` on speedtest1)."""
    kept: Weights = defaultdict(float)
    for name, weight in crossing.items():
        if _spaceless(_callee(name)) in inlinable:
            kept[name] = weight
    return kept


def _callee(call: str) -> str:
    """'callee' of 'caller (a.c) -> callee (b.c)'."""
    return call.split(" -> ", 1)[1].rsplit(" (", 1)[0]


def _innermost_two(frames: list[Frame], stack: tuple[int, ...]) -> tuple[Frame, Frame] | None:
    """The stack's two innermost functions (not inlined frames), found without walking
    the rest of it (speedtest1's recursive stacks are hundreds of frames deep)."""
    callee = None
    for fid in stack:
        frame = frames[fid]
        if not frame.inlined:
            if callee is not None:
                return callee, frame
            callee = frame
    return None


def home_units(profile: Profile, dso: str, unit_paths: set[str]) -> dict[str, str]:
    """Each function of DSO's compile unit: of the unit sources its own lines are in, the
    one with the most of its own time. A count run names each line by its file, and a
    unit that includes another unit's source (lz4hc.c includes lz4.c) has lines of both:
    lz4hc.c's LZ4HC_countPattern, called from lz4hc.c, was a call "between compile
    units" into lz4.c by the line of an inlined lz4.c helper."""
    own: dict[str, Weights] = defaultdict(lambda: defaultdict(float))
    for stack, weight, _count, _thread, _state in profile.rows():
        leaf = next((profile.frames[f] for f in stack if not profile.frames[f].inlined), None)
        if leaf is not None and leaf.dso == dso and leaf.file in unit_paths:
            own[leaf.function][leaf.file] += weight
    return {function: max(files, key=files.__getitem__) for function, files in own.items()}


def call_counts(counts: ExactCounts) -> dict[tuple[str, str], int]:
    """(caller, callee) -> the calls a count run counted between them."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    columns = counts.calls
    for caller, callee, n in zip(
        columns.column("caller"), columns.column("callee"), columns.column("calls"), strict=True
    ):
        out[counts.functions[caller][1], counts.functions[callee][1]] += n
    return out


def frequent(crossing: Weights, calls: dict[tuple[str, str], int] | None) -> Weights:
    """The cross-unit calls whose callee's own work per call is small enough for
    inlining to matter (MAX_OWN_PER_CALL); all of them when the calls were not counted."""
    if calls is None:
        return crossing
    kept: Weights = defaultdict(float)
    for name, weight in crossing.items():
        caller, callee = (side.rsplit(" (", 1)[0] for side in name.split(" -> ", 1))
        n = calls.get((caller, callee), 0)
        if not n or weight / n <= MAX_OWN_PER_CALL:
            kept[name] = weight
    return kept


def _with_callers(crossing: Weights, function_weight: Weights) -> float:
    """The callees' own time under hot cross-unit calls and the part of their callers'
    own time that inlining can change: at most CALLER_SHARE times the time of the calls
    a caller makes (a loop around a one-line call is all that call's; deflate_slow's
    25% of zlib's time around a rare call into trees.c is not)."""
    per_caller: Weights = defaultdict(float)
    for name, weight in crossing.items():
        per_caller[name.split(" (", 1)[0]] += weight
    return sum(
        weight + min(function_weight.get(caller, 0.0), CALLER_SHARE * weight)
        for caller, weight in per_caller.items()
    )


@lru_cache(maxsize=64)
def inlinable_functions(path: str) -> frozenset[str]:
    """The functions of the binary small enough for LTO to inline (INLINABLE_BYTES),
    demangled, without spaces (symbolizers and c++filt space templates differently)."""
    binary = binary_at(path)
    if binary is None:
        return frozenset()
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    small = [
        s.name
        for s in binary.symbols(table, frozenset({STT_FUNC}))
        if s.defined and 0 < s.size <= INLINABLE_BYTES and "." not in s.name
    ]
    names = demangle_map([n for n in small if n.startswith("_Z")])
    return frozenset(_spaceless(names.get(n, n)) for n in small)


def _spaceless(function: str) -> str:
    return "".join(function.split())


def comment_section(path: str) -> list[str]:
    """The compilers named in a binary's .comment ("GCC: (Debian 12.2.0-14) 12.2.0")."""
    binary = binary_at(path)
    section = binary.section(".comment") if binary else None
    if binary is None or section is None:
        return []
    names = binary.data(section).split(b"\0")
    return sorted({n.decode(errors="replace").strip() for n in names if n.strip()})


def has_lto_symbols(path: str) -> bool:
    """GCC's LTO renames the local symbols it moves between units `name.lto_priv.N`."""
    binary = binary_at(path)
    if binary is None:
        return False
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    return any(LTO_SYMBOL.search(s.name) for s in binary.symbols(table, frozenset({STT_FUNC})))


def entry_addresses(counts: ExactCounts | None, dso: str) -> dict[str, int]:
    """A count run's functions of DSO -> the address of their lowest counted instruction
    (their entry, as a rule): two functions of one name (m4's `peek_token (input.c)` and
    `peek_token (regcomp.c)`, gawk's copies of awk.h's statics) are told apart by it, where
    their name finds the first symbol of it, or none."""
    if counts is None:
        return {}
    lowest: dict[int, int] = {}
    for fid, address in zip(counts.cells.column("fn"), counts.cells.column("address"), strict=True):
        if address and address < lowest.get(fid, address + 1):
            lowest[fid] = address
    return {
        fn: lowest[fid]
        for fid, (ob, fn) in enumerate(counts.functions)
        if ob == dso and fid in lowest
    }


def hot_code_shape(path: str, hot: Weights, entries: dict[str, int] | None = None) -> CodeShape:
    """The shape of the machine code of the DSO's hottest functions (by self time); the
    packed SIMD of those that are vector code (`vector_code`) only. `entries`: a count
    run's entry addresses (entry_addresses)."""
    shape = CodeShape()
    total = sum(hot.values())
    entries = entries or {}
    for name, weight in heaviest(hot, MACHINE_CODE_FUNCTIONS):
        at = entries.get(name)
        code = function_code_at(path, at) if at else function_code(path, _identifier(name))
        if code:
            found = shape_of(code)
            if not vector_code(found, weight / total if total else 0.0):
                found = replace(found, packed_xmm=0, packed_wide=0)
            shape += found
    return shape


def vector_code(shape: CodeShape, share: float) -> bool:
    """A function whose vectors -march could widen: at least MIN_VECTOR_DENSITY of its
    instructions packed SIMD, and MIN_VECTOR_SHARE of its binary's time. lz4's 20
    packed SSE instructions were all in LZ4_XXH32_update (0.9% of the run; its hottest
    function has none), brotli's 7 were 0.45% of CreateBackwardReferencesNH6's code:
    -march=native was proposed for both and measured 1.003x and 0.990x (bzip2 0.93x)."""
    packed = shape.packed_xmm + shape.packed_wide
    return (
        shape.instructions > 0
        and packed / shape.instructions >= MIN_VECTOR_DENSITY
        and share >= MIN_VECTOR_SHARE
    )


def hottest_first(
    path: str,
    units: tuple[CompileUnit, ...],
    function_weight: Weights,
    entries: dict[str, int] | None = None,
) -> tuple[CompileUnit, ...]:
    """The units, the one whose functions' own time is the most first (by the DWARF
    address ranges of their symbols): the hint's place and the producer it shows.
    brotli's said constants.c (the first unit, tables only) of a run 83% in
    backward_references.c's CreateBackwardReferencesNH6. `entries`: a count run's entry
    addresses (entry_addresses), which tell two functions of one name apart."""
    binary = binary_at(path)
    if binary is None:
        return units
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    addresses = {s.name: s.value for s in binary.symbols(table, frozenset({STT_FUNC})) if s.defined}
    addresses.update(entries or {})
    per_unit: Weights = defaultdict(float)
    for function, weight in function_weight.items():
        unit = binary.unit_at(addresses[function]) if function in addresses else None
        if unit is not None:
            per_unit[unit.path] += weight
    return tuple(sorted(units, key=lambda u: -per_unit.get(u.path, 0.0)))


def _missing_options_hint(
    dso: str,
    path: str,
    units: tuple[CompileUnit, ...],
    hot: tuple[float, CodeShape],
    crossing: Weights,
    shares: tuple[float, float],
    total: float,
) -> Finding | None:
    """HOT: the DSO's share of the run and its hottest functions' code; `crossing`: the
    callees' own time under hot cross-unit calls; `shares`: that time with their
    callers' around the calls, of the run, and the part of it in callees small enough
    to inline."""
    share, shape = hot
    cross_share, inlinable_share = shares
    known = [u for u in units if u.producer.startswith("GNU ")]
    if not known:
        return None
    lto_symbols = has_lto_symbols(path)
    lto = lto_symbols or any("-flto" in u.producer or "GIMPLE" in u.producer for u in known)
    missing, shown = [], []
    wider = _wider_simd(shape, cpu_flags())
    if wider and not any(re.search(r"-march=(?!x86-64(\s|$))", u.producer) for u in known):
        missing.append("-march=native (or the deployment CPU)")
        shown.append(wider)
    if not lto and cross_share >= MIN_CROSS_UNIT_SHARE:
        missing.append("-flto")
    if not any("-fprofile-use" in u.producer for u in known):
        missing.append("-fprofile-use (PGO)")
        shown.append(_branch_evidence(shape))
    if not missing:
        return None
    evidence = [f"{known[0].path}: {known[0].producer}"]
    compilers = comment_section(path)
    if compilers:
        evidence.append(f".comment: {'; '.join(compilers)}")
    evidence.append(_lto_evidence(lto, crossing, total, lto_symbols))
    evidence += shown
    if "-flto" in missing:
        low, high = LTO_RANGE
        pgo = share * PGO_SAVING if "-fprofile-use (PGO)" in missing else 0.0
        large = cross_share - inlinable_share
        gain = inlinable_share * LTO_SAVING + large * LARGE_CALLEE_SAVING + pgo
        gain_low = cross_share * low
        gain_high = min(share, cross_share * high + share * HINT_RANGE[1])
        basis = (
            f"{100 * cross_share:.1f}% of CPU time is in the own code of functions called "
            "from other compile units without being inlined and in their callers' code "
            f"around those calls (at most {CALLER_SHARE:g}x the calls' time; DWARF of the "
            f"binary and the profile's stacks); LTO saves {LTO_SAVING:.0%} of the "
            f"{100 * inlinable_share:.1f}% in functions small enough to inline "
            f"(one measured loop: -flto 6.0x) and {LARGE_CALLEE_SAVING:.0%} of the "
            f"{100 * large:.1f}% in larger ones and callers (K2: -flto 1.10x), "
            f"{low:.0%}-{high:.0%} in "
            f"all; plus {_pgo_basis(pgo)}PGO/-march's 0-20% at most"
        )
        confidence = 0.45
    else:
        worth = _hint_weight(shape, "-fprofile-use (PGO)" in missing, bool(wider))
        gain = share * HINT_SAVING * worth
        gain_low, gain_high = share * HINT_RANGE[0], share * HINT_RANGE[1]
        basis = (
            "PGO and LTO together often give 5-20% (K2 case in the reference texts), scaled "
            f"by what the hot code leaves them ({worth:.2f} of {HINT_SAVING:.0%}: PGO by its "
            "conditional jumps, -march by 128-bit SIMD this CPU could widen); a rule of "
            "thumb, not calibrated on measured fixes"
        )
        confidence = 0.3
    return Finding(
        rule="build.options-hint",
        kind="build-flags",
        title=f"{dso} is built without {', '.join(m.split(' ')[0] for m in missing)}",
        share=share,
        estimated_gain=gain,
        gain_low=gain_low,
        gain_high=gain_high,
        gain_basis=basis,
        confidence=confidence,
        suggestion=(
            f"Worth a try, measure first (perfsleuth try build): {', '.join(missing)}. "
            "PGO and LTO together often give 5-20%"
            + ("; -march only where the binary runs on known CPUs" if wider else "")
        ),
        dso=dso,
        file=known[0].path,
        evidence=evidence,
        fix={"flags": " ".join(m.split(" ")[0] for m in missing)},
        details={
            "saving": gain / share if share else 0.0,
            "cross_unit_share": cross_share,
            "inlinable_share": inlinable_share,
        },
    )


def _wider_simd(shape: CodeShape, flags: frozenset[str]) -> str:
    """Why -march would pay ("" when it would not): vector loops at the baseline's
    128 bits on a CPU with wider vectors."""
    width = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    if not width or not shape.packed_xmm or shape.packed_wide:
        return ""
    return (
        f"-march: the hottest functions are vectorised at 128 bits ({shape.packed_xmm} "
        f"packed SSE instructions, none wider) and this CPU has {width}"
    )


def _branch_evidence(shape: CodeShape) -> str:
    if not shape.instructions:
        return "PGO: the hottest functions' machine code was not found (no symbols)"
    return (
        f"PGO: {shape.branch_density:.1%} of the hottest functions' instructions are "
        f"conditional jumps ({shape.branches:,} of {shape.instructions:,})"
        + (": branchy code, whose layout PGO orders" if _branchy(shape) else "")
    )


def _branchy(shape: CodeShape) -> bool:
    return shape.branch_density >= BRANCHY


def _pgo_basis(pgo: float) -> str:
    if not pgo:
        return ""
    return (
        f"PGO {PGO_SAVING:.0%} of the binary's time ({100 * pgo:.1f}%; K2 measured 0.13 "
        "of its binary's time here, 0.06 in the reference texts); "
    )


def _hint_weight(shape: CodeShape, pgo: bool, march: bool) -> float:
    """How much of the PGO + -march rule of thumb the hot code leaves them: PGO in
    proportion to its conditional jumps (all of it from BRANCHY on), -march where its
    vectors can widen; each half."""
    branchy = min(1.0, shape.branch_density / BRANCHY) if shape.instructions else 1.0
    return 0.5 * (branchy if pgo else 0.0) + 0.5 * march + 0.5 * (not shape.instructions)


def _lto_evidence(lto: bool, crossing: Weights, total: float, lto_symbols: bool) -> str:
    if lto:
        shape = "symbols named .lto_priv.N" if lto_symbols else "a GIMPLE/-flto producer"
        return f"built with LTO already ({shape})"
    if not crossing:
        return "no hot call crosses compile units: LTO has nothing hot to inline"
    calls = ", ".join(f"{name} {100 * w / total:.1f}%" for name, w in heaviest(crossing, 3))
    return f"hot calls between compile units, not inlined: {calls}"
