"""Hot functions that save and restore registers on calls that never need them.

A function whose rare path calls other functions must keep values in callee-saved
registers across those calls, so the compiler pushes them on entry and pops them
on every exit, including the early return that most calls take. Splitting the rare
path into a separate non-inlined function reached by a tail call leaves the common
path with nothing to save.

The analyzer confirms the shape from the machine code and the exact count of every
instruction (count runs only): it disassembles the function, bounds how many
invocations reach a call (at least as many as its busiest call instruction made, at
most as many as all its call instructions made together: an invocation may call
several times), and sums the executions of the save/restore instructions beyond the
upper bound. Those are what the split saves at least, minus one tail jump per slow
invocation. The upper bound decides: an interpreter loop such as Lua's luaV_execute,
whose 65 call sites together called out 659,094 times in 867,213 invocations, cannot
be shown to return without calling in half of them, though its busiest call site
alone made 285,716 calls.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from capstone import CS_ARCH_X86, CS_MODE_64, Cs, CsError
from capstone.x86 import X86_OP_IMM, X86_OP_REG, X86_REG_RSP

from ..binaries import STB_LOCAL, STT_FUNC, Binary, binary_at
from ..binaries.binary import build_id_of
from ..binaries.packaged import is_packaged
from ..model.counts import ExactCounts
from ..model.findings import Finding
from ..symbols.demangle import demangle_all
from . import Context

MIN_SHARE = 0.005  # of the run's instructions, for a function to be looked at
MIN_CALLS = 1000
MIN_FAST_FRACTION = 0.5  # of calls that reach no call instruction
MIN_GAIN = 0.0005  # of the run: the instructions the split saves, whatever their share
# the System V AMD64 ABI's callee-saved and argument registers, as capstone names them
CALLEE_SAVED = frozenset(
    ["rbx", "ebx", "rbp", "ebp", "r12", "r12d", "r13", "r13d", "r14", "r14d", "r15", "r15d"]
)
ARGUMENTS = frozenset(
    ["rdi", "edi", "rsi", "esi", "rdx", "edx", "rcx", "ecx", "r8", "r8d", "r9", "r9d"]
)
# the general registers (capstone's names of each part -> the register), and how many a
# function may use without saving any: the ABI's caller-saved ones
REGISTERS = {
    **{part: f"r{x}x" for x in "abcd" for part in (f"r{x}x", f"e{x}x", f"{x}x", f"{x}l", f"{x}h")},
    **{part: f"r{x}" for x in ("si", "di", "bp") for part in (f"r{x}", f"e{x}", x, f"{x}l")},
    **{part: f"r{n}" for n in range(8, 16) for part in (f"r{n}", f"r{n}d", f"r{n}w", f"r{n}b")},
}
SCRATCH = 9  # rax, rcx, rdx, rsi, rdi, r8, r9, r10, r11
# the most a measured split saved against its estimate (inlining_note): its kept fast
# path inlined into callers in its file, or left a call
MAX_INLINED_RATIO = 3.5
MAX_CALLED_RATIO = 1.2  # gawk is_integer measured 1.154
NOINLINE_MACRO = """#if defined(__GNUC__)
#  define NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER) && _MSC_VER >= 1310
#  define NOINLINE __declspec(noinline)
#else
#  define NOINLINE
#endif"""


@dataclass
class Instruction:
    address: int
    text: str
    saves: bool  # push/pop or a stack-pointer adjustment by a constant
    calls_out: bool  # a call, or a jump out of the function (tail call)
    keeps_argument: bool = False  # copies an argument register into a callee-saved one
    registers: frozenset[str] = frozenset()  # the general registers it reads or writes


@dataclass
class Shape:
    calls: int  # entries into the function
    slow_calls: int  # invocations that reach a call instruction: at most this many
    fewest_slow_calls: int  # and at least this many (the busiest call instruction)
    own: int  # instructions executed in the function itself
    save_restore: int  # of which register saves/restores
    saved: int  # instructions the split is expected to save
    entry: list[str]  # the saves most calls run before any call out (entry_saves)
    entry_calls: int  # and how many calls run them
    calls_out: bool  # the code has a call instruction anywhere, taken or not (has_call)
    argument_copies: int = 0  # executions of argument copies into callee-saved registers
    registers: int = 0  # the general registers the calls that call nothing use (busy_registers)


def analyze(ctx: Context) -> list[Finding]:
    exact = ctx.counts
    if exact is None or "Ir" not in exact.events:
        return []
    total = exact.total()
    if not total:
        return []
    findings = []
    rebuilt = rebuilt_binaries(ctx)
    for fid, own in hot_functions(exact, total).items():
        if exact.functions[fid][0] in rebuilt:
            continue
        shape = function_shape(exact, fid)
        if shape is not None and is_heavy_prologue(shape, total):
            findings.append(finding(exact, fid, own, shape, total))
    return sorted(findings, key=lambda f: -f.estimated_gain)


def rebuilt_binaries(ctx: Context) -> set[str]:
    """The run's binaries whose build-id is not the run's now: their machine code is not
    the code counted, so its addresses would be read in another build's (xmllint's run,
    its binary replaced by a split build: the finding was left out without a word).
    Each is said in ctx.notes."""
    rebuilt = set()
    for binary in ctx.binaries:
        path, counted = binary.get("path", ""), binary.get("build_id")
        if counted and (now := build_id_of(path)) and now != counted:
            rebuilt.add(path)
            ctx.notes.append(
                f"prologue-overhead: {path} was rebuilt since the run (build-id {counted}, "
                f"now {now}): its functions are not read; record the run again"
            )
    return rebuilt


def hot_functions(exact: ExactCounts, total: int) -> dict[int, int]:
    """function id -> own instructions, of the program's own functions above MIN_SHARE."""
    out = {}
    for fid, own in enumerate(exact.self_by_id()):
        ob = exact.functions[fid][0]
        if own >= MIN_SHARE * total and ob.startswith("/") and not is_packaged(ob):
            out[fid] = own
    return out


def function_shape(exact: ExactCounts, fid: int) -> Shape | None:
    """The counted machine code of a function, or None if it cannot be read."""
    ob, fn = exact.functions[fid]
    counts = exact.instructions(fid)
    code = function_code(ob, fn, min(counts, default=None))
    if code is None:
        return None
    start, raw = code
    instructions = disassemble(raw, start)
    calls = counts.get(start, 0)
    if not instructions or not calls:
        return None
    return shape_of(instructions, counts, calls)


def shape_of(instructions: list[Instruction], counts: dict[int, int], calls: int) -> Shape:
    out = [call_count(instructions, n, counts) for n, i in enumerate(instructions) if i.calls_out]
    slow = min(calls, sum(out))
    saves = [counts.get(i.address, 0) for i in instructions if i.saves]
    copies = [counts.get(i.address, 0) for i in instructions if i.keeps_argument]
    saved = sum(max(0, c - slow) for c in saves + copies) - slow
    entry, entry_calls = entry_saves(instructions, counts, calls)
    busy = busy_registers(instructions, counts, slow)
    needed = busy - SCRATCH  # callee-saved registers the calls that call nothing need
    pushed = sum(1 for text in entry if text.startswith("push"))
    if needed > 0:
        saved = 0 if needed >= pushed else saved - 2 * needed * (calls - slow)
    return Shape(
        calls=calls,
        slow_calls=slow,
        fewest_slow_calls=max(out, default=0),
        own=sum(counts.get(i.address, 0) for i in instructions),
        save_restore=sum(saves),
        argument_copies=sum(copies),
        saved=saved,
        entry=entry,
        entry_calls=entry_calls,
        calls_out=has_call(instructions),
        registers=busy,
    )


def busy_registers(instructions: list[Instruction], counts: dict[int, int], slow: int) -> int:
    """How many general registers (not rsp) the function's work uses on the calls that
    call nothing: those of its instructions run more often than the calls that may call
    out (a slow path's loop may be among them), saves and restores aside. Past SCRATCH,
    a split keeps saving the rest: mawk's REmatch, whose regular-expression loop uses 15
    on the 78% of its calls that call nothing, was said to save 11,528,028 instructions
    by a split that would have to push the same 6 registers."""
    used: set[str] = set()
    for i in instructions:
        if not i.saves and counts.get(i.address, 0) > slow:
            used |= i.registers
    return len(used)


def entry_saves(
    instructions: list[Instruction], counts: dict[int, int], calls: int
) -> tuple[list[str], int]:
    """The saves and argument copies that the most calls run before the first call out,
    and how many calls run them: the prologue, also where the compiler placed it after
    an early test (cJSON's `ensure` tests its argument, then pushes 3 registers on all
    its 310,671 calls; expat's normal_contentTok returns at its test on 30 of 504,771
    calls and pushes 6 registers on the others: "(no saves at entry)" was said of the
    first, "every call runs: (no save on every call)" of the second)."""
    before = [i for i in _until_first_call(instructions) if i.saves or i.keeps_argument]
    most = max((min(calls, counts.get(i.address, 0)) for i in before), default=0)
    if not most:
        return [], 0
    return [i.text for i in before if counts.get(i.address, 0) >= most], most


def _until_first_call(instructions: list[Instruction]) -> list[Instruction]:
    for n, i in enumerate(instructions):
        if i.calls_out:
            return instructions[:n]
    return instructions


def has_call(instructions: list[Instruction]) -> bool:
    """Whether the code calls anything and returns to it. A tail jump keeps nothing
    across it, so a function whose slow paths are all tail jumps saves registers for
    its own work: expat's accountingDiffTolerated, split as the finding said (its debug
    report a tail call), still pushed rbx for its arithmetic and was reported again,
    "the split saves about 1,082,220 instructions"."""
    return any(i.calls_out and i.text.startswith("call") for i in instructions)


def call_count(instructions: list[Instruction], n: int, counts: dict[int, int]) -> int:
    """How often instruction n called out. Callgrind also books the PLT stub's cost on
    a call instruction, so a returning call counts as often as its return address."""
    own = counts.get(instructions[n].address, 0)
    if instructions[n].text.startswith("call") and n + 1 < len(instructions):
        return min(own, counts.get(instructions[n + 1].address, 0))
    return own


def is_heavy_prologue(shape: Shape, total: int) -> bool:
    fast = (shape.calls - shape.slow_calls) / shape.calls
    # Without any call the saves serve the function's own register pressure (a loop,
    # say), and there is no slow path to split off.
    return (
        shape.calls_out
        and shape.calls >= MIN_CALLS
        and fast >= MIN_FAST_FRACTION
        and shape.own > 0
        and shape.saved >= MIN_GAIN * total
    )


def function_code(path: str, name: str, at: int | None = None) -> tuple[int, bytes] | None:
    """(address, machine code) of the function symbol NAME in the ELF file at PATH, or
    of the one holding address AT (one of several of a name, `peek_token (input.c)`)."""
    binary = binary_at(path)
    symbol = _function_symbol(binary, name, at) if binary and binary.is_x86_64 else None
    if binary is None or symbol is None:
        return None
    start, size = symbol
    code = binary.code(start, size)
    return (start, code) if code is not None else None


def _function_symbol(binary: Binary, name: str, at: int | None) -> tuple[int, int] | None:
    """Address and size of a function, by its symbol name or, since callgrind shows
    C++ and Rust names demangled, by its demangled name; of several of the name, the one
    holding address AT (gawk's copies of awk.h's static force_string_fmt, one in each .c
    file calling it)."""
    functions = [s for s in binary.symbols(types=frozenset({STT_FUNC})) if s.size]
    named = [s for s in functions if s.name == name]
    holding = [s for s in named if at is not None and s.value <= at < s.value + s.size]
    for symbol in holding or named:
        return symbol.value, symbol.size
    mangled = [symbol for symbol in functions if symbol.name.startswith(("_Z", "_R"))]
    for symbol, demangled in zip(mangled, demangle_all([s.name for s in mangled]), strict=True):
        if demangled == name:
            return symbol.value, symbol.size
    if at is None:
        return None
    for symbol in functions:
        if symbol.value <= at < symbol.value + symbol.size:
            return symbol.value, symbol.size
    return None


def disassemble(raw: bytes, start: int) -> list[Instruction]:
    md = Cs(CS_ARCH_X86, CS_MODE_64)
    md.detail = True
    end = start + len(raw)
    out = []
    try:
        for insn in md.disasm(raw, start):
            out.append(
                Instruction(
                    address=insn.address,
                    text=f"{insn.mnemonic} {insn.op_str}".strip(),
                    saves=_saves(insn),
                    calls_out=_calls_out(insn, start, end),
                    keeps_argument=_keeps_argument(insn),
                    registers=_registers(insn),
                )
            )
    except CsError:
        return []
    return out


def _saves(insn) -> bool:
    if insn.mnemonic in ("push", "pop"):
        return True
    if insn.mnemonic not in ("sub", "add") or len(insn.operands) != 2:
        return False
    target, amount = insn.operands
    return target.type == X86_OP_REG and target.reg == X86_REG_RSP and amount.type == X86_OP_IMM


def _registers(insn) -> frozenset[str]:
    read, written = insn.regs_access()
    return frozenset(
        REGISTERS[name] for name in map(insn.reg_name, (*read, *written)) if name in REGISTERS
    )


def _keeps_argument(insn) -> bool:
    """`mov rbp, rdi`: an argument kept in a callee-saved register across a call, which
    the common path of a split function never makes (lz4's LZ4HC_countPattern with a
    rare trace call ran 3 of them a call beside its 6 pushes and pops: the estimate
    without them was 2,784,642 instructions, the split saved 4,176,963)."""
    if insn.mnemonic != "mov" or len(insn.operands) != 2:
        return False
    target, source = insn.operands
    return (
        target.type == X86_OP_REG
        and source.type == X86_OP_REG
        and insn.reg_name(target.reg) in CALLEE_SAVED
        and insn.reg_name(source.reg) in ARGUMENTS
    )


def _calls_out(insn, start: int, end: int) -> bool:
    if insn.mnemonic == "call":
        return True
    if insn.mnemonic != "jmp" or not insn.operands:
        return False
    target = insn.operands[0]
    return target.type == X86_OP_IMM and not start <= target.imm < end


def finding(exact: ExactCounts, fid: int, own: int, shape: Shape, total: int) -> Finding:
    ob, fn = exact.functions[fid]
    file, line = exact.entry_sites()[fid]
    fast = shape.calls - shape.slow_calls
    per_call = shape.save_restore / shape.calls
    name = source_name(fn)
    slow_name = f"{name.split('::')[-1]}_slow"
    start = min(exact.instructions(fid), default=0)
    note, ratio = inlining_note(
        name,
        file,
        is_static(ob, start),
        calls_by_file(exact, fid),
        unit_calls(ob, start, callers_by_entry(exact, fid)),
    )
    return Finding(
        rule="prologue.split-slow-path",
        kind="prologue-overhead",
        title=(
            f"{name} spends {shape.save_restore / shape.own:.0%} of its instructions saving "
            f"and restoring registers, though {_returning_share(fast, shape.calls)} "
            "return without calling anything"
        ),
        function=fn,
        dso=Path(ob).name,
        file=file,
        line=line,
        share=own / total,
        estimated_gain=shape.saved / total,
        confidence=0.7,
        evidence=[
            f"{shape.calls:,} calls; {_slow_calls(shape)} reach a call instruction",
            f"{shape.save_restore:,} of its {shape.own:,} instructions are pushes, pops and "
            f"stack adjustments ({per_call:.1f} per call)",
            *_copies(shape),
            entry_evidence(shape),
            f"the split saves about {shape.saved:,} instructions "
            f"({shape.saved / shape.calls:.1f} per call, {shape.saved / total:.2%} of the run)",
            note,
        ],
        gain_low=shape.saved / total,
        gain_high=ratio * shape.saved / total,
        gain_basis="the saves and argument copies counted; up to the largest ratio of a "
        "measured split's saving to its estimate where it is called so",
        suggestion=(
            f"Keep the early-return test in {name} and move the rest into a separate "
            f"`static NOINLINE` function that {name} returns with a tail call "
            f"(`return {slow_name}(args);`): the common path then saves no registers. "
            "NOINLINE is essential, or the compiler inlines the slow path back."
        ),
        fix={"macro": NOINLINE_MACRO},
        details={
            "calls": shape.calls,
            "slow_calls": shape.slow_calls,
            "fewest_slow_calls": shape.fewest_slow_calls,
            "save_restore_instructions": shape.save_restore,
            "instructions_saved": shape.saved,
            "instructions_saved_per_call": shape.saved / shape.calls,
            "entry": shape.entry,
            "entry_calls": shape.entry_calls,
        },
    )


def calls_by_file(exact: ExactCounts, fid: int) -> dict[str, int]:
    """The calls into function `fid` by the file of the line making them."""
    out: dict[str, int] = {}
    calls = exact.calls
    for callee, file, count in zip(
        calls.column("callee"), calls.column("file"), calls.column("calls"), strict=True
    ):
        if callee == fid:
            name = exact.files[file]
            out[name] = out.get(name, 0) + count
    return out


def callers_by_entry(exact: ExactCounts, fid: int) -> dict[int, int]:
    """The calls into function `fid` from functions of its object, by the address of
    each caller's first counted instruction."""
    ob = exact.functions[fid][0]
    calls = exact.calls
    by_caller: dict[int, int] = {}
    for caller, callee, count in zip(
        calls.column("caller"), calls.column("callee"), calls.column("calls"), strict=True
    ):
        if callee == fid and exact.functions[caller][0] == ob:
            by_caller[caller] = by_caller.get(caller, 0) + count
    entries: dict[int, int] = {}
    cells = exact.cells
    for f, address in zip(cells.column("fn"), cells.column("address"), strict=True):
        if f in by_caller and address and address < entries.get(f, address + 1):
            entries[f] = address
    out: dict[int, int] = {}
    for caller, entry in entries.items():
        out[entry] = out.get(entry, 0) + by_caller[caller]
    return out


def unit_calls(path: str, start: int, callers: dict[int, int]) -> tuple[int, str]:
    """Of `callers` (a caller's address -> its calls) into the function at `start` in the
    ELF file at PATH, the calls from its own compile unit (DWARF's .debug_aranges), and
    that unit's source file name; (0, "") when the units are not known. A unity build
    (mujs's one.c includes every .c file, SQLite's amalgamation) calls from other files
    within one unit, where the compiler may inline."""
    binary = binary_at(path)
    unit = binary.unit_at(start) if binary is not None else None
    if binary is None or unit is None:
        return 0, ""
    own = sum(n for at, n in callers.items() if binary.unit_at(at) == unit)
    return own, Path(unit.name).name


def is_static(path: str, start: int) -> bool:
    """Whether the function at `start` in the ELF file at PATH is a local symbol (static):
    called only from its own compile unit, whatever file its calling lines are in (gawk's
    cmp_scalars, static in eval.c, is called from interpret.h, which eval.c includes)."""
    binary = binary_at(path)
    return binary is not None and any(
        s.value == start and s.binding == STB_LOCAL
        for s in binary.symbols(types=frozenset({STT_FUNC}))
    )


def inlining_note(
    name: str,
    own_file: str,
    static: bool,
    callers: dict[str, int],
    unit: tuple[int, str] = (0, ""),
) -> tuple[str, float]:
    """What the estimate leaves out, said from where the function is called, and the most
    a split saved against its estimate when measured so: splits whose kept fast path GCC
    then inlined into callers in its file saved 1.5-3.5 times their estimate (tcc's
    tok_str_add2 1.53, jq's jvp_utf8_next 3.2, m4's peek_input 3.5: the calls, returns
    and the callers' moves around them went too), those left a call 1.0-1.15 times
    (keys_equal 1.01, cJSON's ensure 1.14, gawk's is_integer 1.15). UNIT: the calls from
    the function's own compile unit and the unit's name (unit_calls). docs/counts.md."""
    total = sum(callers.values())
    own = sum(n for file, n in callers.items() if Path(file).name == Path(own_file).name)
    in_unit, unit_name = unit
    if own or static or in_unit:
        if static:
            where = "it is static: its calls come from its own compile unit"
        elif own >= in_unit:
            where = (
                f"{_part(own, total)} of its calls come from its own file ({Path(own_file).name})"
            )
        else:
            where = (
                f"{_part(in_unit, total)} of its calls come from its own compile unit ({unit_name})"
            )
        return (
            f"{where}, where the compiler may inline what the split keeps (unless it is "
            "marked noinline): then "
            "the calls, returns and the callers' moves around them go too, which this "
            "estimate leaves out (splits measured so saved 1.5-3.5x their estimate: tcc's "
            "tok_str_add2, jq's jvp_utf8_next, m4's peek_input)",
            MAX_INLINED_RATIO,
        )
    others = ", ".join(sorted({Path(file).name for file in callers})) or "nowhere counted"
    return (
        f"its calls come from other files ({others}): what the split keeps stays a call, as "
        "the estimate assumes (splits measured so saved 1.0-1.15x their estimate)",
        MAX_CALLED_RATIO,
    )


def _part(n: int, total: int) -> str:
    return f"{n / total:.0%}" if n < total else "all"


def entry_evidence(shape: Shape) -> str:
    if not shape.entry:
        return "no call saves a register before its first call out"
    who = (
        "every call runs"
        if shape.entry_calls >= shape.calls
        else (f"{shape.entry_calls:,} of its {shape.calls:,} calls run")
    )
    return f"{who}: {'; '.join(shape.entry)}"


def _copies(shape: Shape) -> list[str]:
    if not shape.argument_copies:
        return []
    return [
        f"and {shape.argument_copies:,} copies of arguments into those registers "
        f"({shape.argument_copies / shape.calls:.1f} per call)"
    ]


def _returning_share(fast: int, calls: int) -> str:
    if fast == calls:
        return f"all {calls:,} of its calls"
    return f"at least {_floor_percent(fast / calls)} of its calls"


def _floor_percent(fraction: float) -> str:
    """A lower bound as a percentage, never rounded up (99.99% is not 100.0%)."""
    return f"{math.floor(fraction * 1000) / 10:.1f}%"


def _slow_calls(shape: Shape) -> str:
    if shape.fewest_slow_calls == shape.slow_calls:
        return f"{shape.slow_calls:,}"
    return f"{shape.fewest_slow_calls:,} to {shape.slow_calls:,}"


def source_name(fn: str) -> str:
    """The name as written in the source: no parameters, no compiler clone suffixes."""
    name = re.sub(r" \[clone [^\]]*\]", "", fn).split("(")[0]
    return re.sub(r"\.(isra|part|constprop|cold|lto_priv)(\.\d+)?", "", name)
