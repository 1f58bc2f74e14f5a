"""The machine code of a source loop: capstone disassembly, pyelftools line table.

Finds the loop's instructions in a binary (or object file) from the source lines
it spans, then the signature of an aliasing write: inside the loop, a byte store,
and loads from memory at addresses the loop never changes — loads the compiler
repeats on every iteration because the byte store might have changed that memory.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import capstone
from capstone import x86

from ..binaries import STT_FUNC, Binary, binary_at

# Loads relative to these are stack spills, not reloads of the program's data; rbp
# joins them in functions that use it as the frame pointer. (rip-relative loads into
# general registers are globals, and count; into vector registers they are constants.)
FRAME_REGISTERS = frozenset({"rsp"})
FRAME_POINTER_SETUP = "mov rbp, rsp"
BYTE_STORE_MNEMONICS = frozenset(
    {"mov", "add", "sub", "and", "or", "xor", "inc", "dec", "neg", "not", "shl", "shr", "sar"}
    | {"adc", "sbb", "rol", "ror"}
)
# setcc writes one byte: clang stores `out[i] = a > b` as `setae byte ptr [...]`.
SET_BYTE_PREFIX = "set"
JUMP_GROUP = capstone.CS_GRP_JUMP
UNCONDITIONAL_JUMP = "jmp"
CALL_GROUP = capstone.CS_GRP_CALL
RETURN_GROUP = capstone.CS_GRP_RET
LOAD_SIZES = (1, 2, 4, 8)
WORD = 8


@dataclass
class Instruction:
    address: int
    text: str  # "mov rcx, qword ptr [r14]"
    where: str  # "expand.cc:12", "" when the line table has no row for it

    def describe(self) -> str:
        where = f"  ; {self.where}" if self.where else ""
        return f"{self.address:#x}: {self.text}{where}"


@dataclass
class LoopCode:
    """One machine loop (a backward jump and the code it repeats) of a source loop —
    or, when `straight`, the straight code the compiler made of it (unrolled, or a call)."""

    function: str
    instructions: list[Instruction]
    byte_stores: list[Instruction] = field(default_factory=list)
    # invariant-address loads; in straight code, an address loaded again after a byte store
    reloads: list[Instruction] = field(default_factory=list)
    straight: bool = False

    @property
    def simd(self) -> int:
        """How many of its instructions use vector registers."""
        return sum(1 for i in self.instructions if "mm" in i.text)

    @property
    def confirms_aliasing(self) -> bool:
        return bool(self.byte_stores and self.reloads)

    def evidence(self, limit: int = 8) -> list[str]:
        chosen = sorted(self.byte_stores[:3] + self.reloads[:5], key=lambda i: i.address)
        return [i.describe() for i in chosen[:limit]]


@dataclass
class _Decoded:
    insn: capstone.CsInsn
    line: int  # line in the loop's source file, 0 when elsewhere
    where: str


def machine_loops(
    binary: Path, source: str, first: int, last: int, stack_reads: bool = False
) -> list[LoopCode]:
    """Every machine loop (backward jump) running code of source lines first..last.
    With `stack_reads` (the source loop reads a local object whose address escaped),
    loads from the stack frame count as reloads: that object lives there."""
    rows = _LineRows(str(binary), Path(source).name)
    starts = rows.addresses_of(first, last)
    loops = []
    for name, code in _functions_holding(str(binary), starts):
        decoded = [_Decoded(i, rows.line_at(i.address), rows.where(i.address)) for i in code]
        # In an object file (.o) every section starts at 0, so an address may have rows
        # of two functions: the table's addresses of these lines count as theirs too.
        inside = {d.insn.address for d in decoded if first <= d.line <= last} | set(starts)
        frame = frozenset() if stack_reads else FRAME_REGISTERS
        if not stack_reads and any(_text(i) == FRAME_POINTER_SETUP for i in code):
            frame = frame | {"rbp"}
        loops.extend(_machine_loops(name, decoded, inside, frame, rows))
    return loops


def loop_code(
    binary: Path,
    source: str,
    first: int,
    last: int,
    prefer_reloads: bool = True,
    stack_reads: bool = False,
) -> LoopCode | None:
    """The innermost machine loop holding a byte store among the code of source lines
    first..last of `source` (a file name) — the innermost one that reloads, unless
    `prefer_reloads` is off (a fix's build: its inner loop, reloads or not, and when
    loops have both ends on those lines, the innermost of those, byte stores or not:
    the fix may have merged them, as GCC makes Monero's eight byte stores one once
    `v[i]` is read once); None when the binary has no such code. `stack_reads` as for
    machine_loops."""
    loops = machine_loops(binary, source, first, last, stack_reads)
    if not prefer_reloads:
        loops = [loop for loop in loops if _ends_on(loop, source, first, last)] or loops
    with_stores = [loop for loop in loops if loop.byte_stores]
    if not with_stores:
        return min(loops, key=lambda loop: len(loop.instructions), default=None)
    confirmed = [loop for loop in with_stores if loop.confirms_aliasing and prefer_reloads]
    return min(confirmed or with_stores, key=lambda loop: len(loop.instructions))


def _ends_on(loop: LoopCode, source: str, first: int, last: int) -> bool:
    """Are the loop's backward jump and its target both code of source lines first..last?"""
    ends = (loop.instructions[0].where, loop.instructions[-1].where)
    lines = {f"{Path(source).name}:{line}" for line in range(first, last + 1)}
    return all(end in lines for end in ends)


def straight_code(binary: Path, source: str, first: int, last: int) -> LoopCode | None:
    """The code of source lines first..last when no machine loop runs it — the compiler
    unrolled the source loop into straight code or made it a call (GCC's memmove for a
    byte copy) — with its byte stores and reloads: loads of an address already loaded
    before a byte store, in code without a jump, call or jump target between (an
    unrolled loop that reloads a pointer after every byte). The copy that reloads, if
    any (a line inlined in several functions has several); None when a machine loop
    runs those lines or there is no code for them."""
    if machine_loops(binary, source, first, last):
        return None
    return _straight_copies(binary, source, first, last, own_lines_only=False)


def straight_line_code(binary: Path, source: str, first: int, last: int) -> LoopCode | None:
    """The code of straight source lines first..last (no source loop: an aliasing
    write between two reads of the same memory) with the byte stores of those lines
    and the reloads after them: in each function holding them (a line inlined in
    several callers, or several times in one, has a copy in each; a caller's loop
    around a copy does not matter), the loads of an address already loaded before one
    of those byte stores, on some way through the function's forward jumps. The copy
    that reloads, if any; None when the binary has no code for those lines."""
    return _straight_copies(binary, source, first, last, own_lines_only=True)


def _straight_copies(
    binary: Path, source: str, first: int, last: int, own_lines_only: bool
) -> LoopCode | None:
    rows = _LineRows(str(binary), Path(source).name)
    starts = set(rows.addresses_of(first, last))
    copies = []
    for name, code in _functions_holding(str(binary), starts):
        own = [
            n
            for n, insn in enumerate(code)
            if insn.address in starts or first <= rows.line_at(insn.address) <= last
        ]
        if own:
            span = code if own_lines_only else code[own[0] : own[-1] + 1]
            counted = {code[n].address for n in own} if own_lines_only else None
            copy = _straight(name, span, _jump_targets(code), rows, counted)
            copies.append(_trimmed(copy, counted) if counted else copy)
    with_reloads = [copy for copy in copies if copy.confirms_aliasing]
    return next(iter(with_reloads or copies), None)


def _trimmed(code: LoopCode, own: set[int]) -> LoopCode:
    """The code from the first of its own lines' instructions to the last of them or
    of its reloads (the whole function was followed)."""
    ends = own | {i.address for i in code.reloads}
    code.instructions = [i for i in code.instructions if min(ends) <= i.address <= max(ends)]
    return code


def _straight(
    name: str,
    span: list[capstone.CsInsn],
    targets: set[int],
    rows: _LineRows,
    counted: set[int] | None = None,
    words: bool = False,
) -> LoopCode:
    """One copy of the straight code, its byte stores, and the loads of an address
    loaded before one of them, in code without a jump, call or jump target between.
    With `counted`, only the byte stores at those addresses count (the other code of
    the span is another copy's, or the caller's), and the code is followed
    along its forward jumps: an `if` that skips a store leaves what was loaded before
    it loaded on both ways, and a load is a reload when it is one on some way into it
    (GCC merges the same tail of two `switch` cases, so a case's reload may be on
    the other's lines, reached by a jump back). `words` as for _reloads."""
    code = LoopCode(
        name, [Instruction(i.address, _text(i), rows.where(i.address)) for i in span], straight=True
    )
    follow = counted is not None
    loaded: dict[tuple, bool] = {}  # address read -> a byte store since
    arriving: dict[int, list[dict[tuple, bool]]] = {}  # target -> `loaded` of its jumps
    reached = True  # by the code before it, not only by jumps: no `ret` or `jmp` since
    for insn, instruction in zip(span, code.instructions, strict=True):
        if insn.address in targets:
            ways = arriving.pop(insn.address, []) + [loaded] * reached
            loaded = _join(ways) if follow else {}
            reached = True
        counts = counted is None or insn.address in counted
        if _is_byte_store(insn):
            if counts:
                code.byte_stores.append(instruction)
                loaded = dict.fromkeys(loaded, True)
        elif (address := _read_address(insn, FRAME_REGISTERS)) is not None:
            if _reloads(loaded, address, words):
                code.reloads.append(instruction)
            loaded[address] = False
        target = _jump_target(insn)
        if follow and target is not None and target > insn.address:
            arriving.setdefault(target, []).append(dict(loaded))
        ends = insn.group(RETURN_GROUP) or insn.mnemonic == UNCONDITIONAL_JUMP
        reached = reached and not ends
        conditional = insn.group(JUMP_GROUP) and not ends
        if insn.group(CALL_GROUP) or ends or (conditional and not follow):
            loaded = {}
        loaded = _after_register_writes(insn, loaded)
    return code


def _after_register_writes(insn: capstone.CsInsn, loaded: dict[tuple, bool]) -> dict[tuple, bool]:
    """The addresses read before `insn` still known after it: one whose register it
    changes is forgotten, unless it only adds a constant to it (a pointer stepping
    on: GCC's `add rdi, 8` between `[rdi]` and `[rdi - 8]`, the same v[i])."""
    _, writes = insn.regs_access()
    written = {_family(insn.reg_name(r)) for r in writes} - {"rflags"}
    step = _constant_step(insn)
    kept = {}
    for (regs, scale, disp, width), stored in loaded.items():
        if not set(regs) & written:
            kept[(regs, scale, disp, width)] = stored
        elif step is not None and written == {step[0]} and regs.count(step[0]) == 1:
            times = 1 if regs[0] == step[0] else scale
            kept[(regs, scale, disp - step[1] * times, width)] = stored
    return kept


def _constant_step(insn: capstone.CsInsn) -> tuple[str, int] | None:
    """(register, constant) for `add reg, imm` and `sub reg, imm` (as -imm)."""
    if insn.mnemonic not in ("add", "sub") or len(insn.operands) != 2:
        return None
    dest, source = insn.operands
    if dest.type != x86.X86_OP_REG or source.type != x86.X86_OP_IMM:
        return None
    sign = 1 if insn.mnemonic == "add" else -1
    return _family(insn.reg_name(dest.reg)), sign * int(source.imm)


def _reloads(loaded: dict[tuple, bool], address: tuple, words: bool = False) -> bool:
    """Whether a load reads bytes loaded before a byte store: of the same registers
    and scale, at overlapping displacements (`last_bytes_ >> 8` is the byte at +1 of
    a 16-bit field loaded whole before the store). With `words` (one iteration of a
    loop), also another part of the 8-byte word a narrower load read before the
    store: clang reads `(v[i] >> 8) & 255` as the byte at +1 of v[i], so Monero's
    bulletproof_PROVE loop loads v[i] again a byte at a time, one after each store."""
    regs, scale, start, width = address
    return any(
        stored
        and (r, s) == (regs, scale)
        and (
            (d < start + width and start < d + w)
            or (words and max(w, width) < WORD and d // WORD == start // WORD)
        )
        for (r, s, d, w), stored in loaded.items()
    )


def _join(ways: list[dict[tuple, bool]]) -> dict[tuple, bool]:
    """What is loaded on some way into a jump target (the ways seen: the code before
    it and its forward jumps), and whether a byte store followed on one of them."""
    joined: dict[tuple, bool] = {}
    for way in ways:
        for address, stored in way.items():
            joined[address] = joined.get(address, False) or stored
    return joined


def _jump_targets(code: list[capstone.CsInsn]) -> set[int]:
    return {target for insn in code if (target := _jump_target(insn)) is not None}


def vector_loop(binary: Path, source: str, first: int, last: int) -> LoopCode | None:
    """The machine loop of those source lines doing the most SIMD work, if any."""
    loops = [loop for loop in machine_loops(binary, source, first, last) if loop.simd]
    return max(loops, key=lambda loop: loop.simd, default=None)


def line_instructions(
    binary: Path, source: str, lines: Iterable[int]
) -> dict[int, list[tuple[str, Instruction]]]:
    """The instructions of each of the given lines of `source` (a file name), with the
    function symbol holding each, in address order; lines without code are left out.
    A line inlined into several functions has the instructions of every copy."""
    wanted = set(lines)
    rows = _LineRows(str(binary), Path(source).name)
    starts = [
        address for address, name, line in rows.rows if name == rows.source_name and line in wanted
    ]
    out: dict[int, list[tuple[str, Instruction]]] = {}
    for name, code in _functions_holding(str(binary), starts):
        for insn in code:
            line = rows.line_at(insn.address)
            if line in wanted:
                where = rows.where(insn.address)
                out.setdefault(line, []).append(
                    (name, Instruction(insn.address, _text(insn), where))
                )
    for code in out.values():
        code.sort(key=lambda pair: pair[1].address)
    return out


def _machine_loops(
    name: str, code: list[_Decoded], addresses: set[int], frame: frozenset[str], rows: _LineRows
) -> list[LoopCode]:
    """Every backward jump of the source loop: its jump or its target is code of the
    loop's lines (or of another file, an inlined header's). A loop whose both ends are
    elsewhere in the file encloses the source loop (a function's big dispatch loop
    around a copy loop GCC turned into memmove) and is not its code."""
    index = {d.insn.address: n for n, d in enumerate(code)}
    loops = []
    for n, d in enumerate(code):
        target = _jump_target(d.insn)
        if target is None or target > d.insn.address or target not in index:
            continue
        body = code[index[target] : n + 1]
        ends = (body[0], d)
        own = any(e.insn.address in addresses for e in ends) or all(e.line == 0 for e in ends)
        if not own or not any(b.insn.address in addresses for b in body):
            continue
        loops.append(_analyse_loop(name, body, frame, rows))
    return loops


def _analyse_loop(
    name: str, body: list[_Decoded], frame: frozenset[str], rows: _LineRows
) -> LoopCode:
    """The loop's byte stores and its reloads: loads of an address no instruction of
    the loop changes, and loads in one iteration of an address loaded before one of
    its byte stores (`v[i]` read again for each byte of `sv[i]` written)."""
    written = set()
    for d in body:
        _, writes = d.insn.regs_access()
        written |= {_family(d.insn.reg_name(r)) for r in writes}
    loop = LoopCode(name, [Instruction(d.insn.address, _text(d.insn), d.where) for d in body])
    for d, insn in zip(body, loop.instructions, strict=True):
        if _is_byte_store(d.insn):
            loop.byte_stores.append(insn)
        elif _invariant_load(d.insn, written | frame):
            loop.reloads.append(insn)
    code = [d.insn for d in body]
    invariant = {i.address for i in loop.reloads}
    again = _straight(name, code, _jump_targets(code), rows, words=True).reloads
    loop.reloads += [i for i in again if i.address not in invariant]
    loop.reloads.sort(key=lambda i: i.address)
    return loop


def _text(insn: capstone.CsInsn) -> str:
    return f"{insn.mnemonic} {insn.op_str}".strip()


def _jump_target(insn: capstone.CsInsn) -> int | None:
    if not insn.group(JUMP_GROUP) or not insn.operands:
        return None
    op = insn.operands[0]
    return int(op.imm) if op.type == x86.X86_OP_IMM else None


def _is_byte_store(insn: capstone.CsInsn) -> bool:
    stores = insn.mnemonic in BYTE_STORE_MNEMONICS or insn.mnemonic.startswith(SET_BYTE_PREFIX)
    if not stores or not insn.operands:
        return False
    dest = insn.operands[0]
    return dest.type == x86.X86_OP_MEM and dest.size == 1


def _invariant_load(insn: capstone.CsInsn, excluded: set[str] | frozenset[str]) -> bool:
    """A load into a general register (of any width: a byte or a short field is
    reloaded too) from an address no register of the loop changes."""
    return _read_address(insn, excluded) is not None


def _read_address(
    insn: capstone.CsInsn, excluded: set[str] | frozenset[str]
) -> tuple[tuple[str, ...], int, int, int] | None:
    """The address a load into a general register (or a compare) reads — (its
    registers, scale, displacement, width) — when built from registers, none of them
    `excluded`."""
    if insn.mnemonic.startswith(("lea", "nop", "prefetch")) or len(insn.operands) < 2:
        return None
    dest = insn.operands[0]
    compares = insn.mnemonic in ("cmp", "test")  # reads its memory operand, first or not
    into_register = dest.type == x86.X86_OP_REG and insn.reg_name(dest.reg) in GENERAL_REGISTERS
    if not (compares or into_register):
        return None
    for op in insn.operands if compares else insn.operands[1:]:
        if op.type != x86.X86_OP_MEM or op.size not in LOAD_SIZES:
            continue
        regs = tuple(_family(insn.reg_name(r)) for r in (op.mem.base, op.mem.index) if r)
        if regs and not set(regs) & excluded:
            if regs == ("rip",):  # a global: the same one is at another displacement
                return regs, 1, insn.address + insn.size + op.mem.disp, op.size
            return regs, op.mem.scale, op.mem.disp, op.size
    return None


def _register_families() -> dict[str, str]:
    families = {}
    for full, subs in {
        "rax": "eax ax al ah",
        "rbx": "ebx bx bl bh",
        "rcx": "ecx cx cl ch",
        "rdx": "edx dx dl dh",
        "rsi": "esi si sil",
        "rdi": "edi di dil",
        "rbp": "ebp bp bpl",
        "rsp": "esp sp spl",
    }.items():
        families.update({sub: full for sub in subs.split()})
    for n in range(8, 16):
        families.update({f"r{n}{suffix}": f"r{n}" for suffix in ("d", "w", "b")})
    return families


REGISTER_FAMILIES = _register_families()
GENERAL_REGISTERS = frozenset(REGISTER_FAMILIES) | frozenset(REGISTER_FAMILIES.values())


def _family(reg: str | None) -> str:
    """The 64-bit register a sub-register belongs to: eax, ax, al -> rax; r8d -> r8."""
    return REGISTER_FAMILIES.get(reg or "", reg or "")


class _LineRows:
    """The line table of a binary: which source line each address belongs to."""

    def __init__(self, binary: str, source_name: str) -> None:
        self.source_name = source_name
        found = binary_at(binary)
        self.rows = _line_rows(found) if found else []
        self.starts = [address for address, _, _ in self.rows]

    def _row(self, address: int) -> tuple[str, int]:
        n = bisect.bisect_right(self.starts, address) - 1
        return ("", 0) if n < 0 else self.rows[n][1:]

    def line_at(self, address: int) -> int:
        """The line of source_name the address belongs to, 0 for other files."""
        name, line = self._row(address)
        return line if name == self.source_name else 0

    def where(self, address: int) -> str:
        name, line = self._row(address)
        return f"{name}:{line}" if name and line else ""

    def addresses_of(self, first: int, last: int) -> list[int]:
        return [
            address
            for address, name, line in self.rows
            if name == self.source_name and first <= line <= last
        ]


@functools.lru_cache(maxsize=16)
def _line_rows(binary: Binary) -> list[tuple[int, str, int]]:
    """(address, file base name, line) rows of every line program, by address."""
    rows: list[tuple[int, str, int]] = []
    dwarf = binary.dwarf()
    if dwarf is None:
        return rows
    for cu in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        names = _file_names(program)
        for entry in program.get_entries():
            state = entry.state
            if state is not None and not state.end_sequence:
                rows.append((state.address, names.get(state.file, ""), state.line))
    rows.sort(key=lambda row: row[0])
    return rows


def _file_names(program) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """File index -> base name (DWARF 5 numbers files from 0, earlier versions from 1)."""
    base = 0 if program.header.version >= 5 else 1
    return {
        n + base: Path(entry.name.decode(errors="replace")).name
        for n, entry in enumerate(program.header.file_entry)
    }


def _functions_holding(path: str, addresses: Iterable[int]):  # type: ignore[no-untyped-def]
    """(symbol name, decoded instructions) of each function containing any address."""
    wanted = sorted(addresses)
    binary = binary_at(path)
    if binary is None or not binary.is_x86_64:
        return
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    sections: dict[int, bytes] = {}
    for symbol in binary.symbols(types=frozenset({STT_FUNC})):
        start, size = symbol.value, symbol.size
        if symbol.in_section and size and any(start <= a < start + size for a in wanted):
            text = binary.sections[symbol.section]
            if symbol.section not in sections:
                sections[symbol.section] = binary.data(text)
            offset = start if binary.relocatable else start - text.addr
            code = sections[symbol.section][offset : offset + size]
            yield symbol.name, list(md.disasm(code, start))
