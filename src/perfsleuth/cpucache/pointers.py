"""Which struct an access's base register points to, for pointers that are neither
the traced function's parameters nor global variables: local pointer variables
(`struct flow *f = &t->flows[i]`, `t + i`) and pointers held in a struct's member
(`s->peer->rx`).

A local: DWARF says in which register a variable lives over which instructions
(its location list); an access `disp(reg)` at an instruction where a pointer-to-
struct variable lives in reg goes through that variable. A member: the register
was last written, a few instructions before the access, by a load
`mov reg, disp2(base)` where base points to a struct (a parameter, a local or
another member, two levels at most) whose member at disp2 is a pointer to a struct.
Registers are followed back in the straight-line code before the access only, up
to a call (which clobbers them) or BACKWARD instructions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from capstone import CsInsn
from capstone.x86 import X86_OP_MEM, X86_OP_REG, X86_REG_INVALID
from elftools.dwarf.die import DIE
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry, LocationParser

from .struct_types import Struct, attr_text, origin, strip_qualifiers, struct_of

BACKWARD = 16  # instructions searched back for the load of a member pointer
MEMBER_DEPTH = 2  # s->a->b
# DWARF's x86-64 register numbers (DW_OP_reg0 ...), as capstone names them
DWARF_REGISTERS = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                   "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15")  # fmt: skip
VARIABLE_TAGS = ("DW_TAG_variable", "DW_TAG_formal_parameter")
SCOPE_TAGS = ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine")
ENDS_STRAIGHT_LINE = frozenset({"call", "ret", "jmp"})


@dataclass(frozen=True)
class Pointer:
    """A pointer to a struct: `f` (a local) or `s->peer` (a member's)."""

    name: str
    kind: Literal["parameter", "local", "member"]
    struct: Struct
    pointee: DIE  # the struct's DIE, for its pointer members


@dataclass(frozen=True)
class Variable:
    pointer: Pointer
    ranges: tuple[tuple[int, int, str], ...]  # [start, end) ELF addresses, register


def variables(
    subprogram: DIE, pc_range: tuple[int, int], locations: LocationParser
) -> list[Variable]:
    """The function's pointer-to-struct parameters and locals that DWARF places in
    registers; pc_range: the function's [start, end)."""
    structs = DWARFExprParser(subprogram.cu.structs)
    found = []
    for die in scope_variables(subprogram):
        declared = origin(die)
        pointee = pointee_die(declared)
        if pointee is None or "DW_AT_location" not in die.attributes:
            continue
        struct = struct_of(pointee)
        if struct is None:
            continue
        kind: Literal["parameter", "local"] = (
            "parameter" if die.tag == "DW_TAG_formal_parameter" else "local"
        )
        ranges = tuple(register_ranges(die, structs, locations, pc_range))
        if ranges:
            name = attr_text(declared, "DW_AT_name")
            found.append(Variable(Pointer(name, kind, struct, pointee), ranges))
    return found


def scope_variables(scope: DIE) -> Iterator[DIE]:
    for child in scope.iter_children():
        if child.tag in VARIABLE_TAGS:
            yield child
        elif child.tag in SCOPE_TAGS:
            yield from scope_variables(child)


def pointee_die(declared: DIE) -> DIE | None:
    """The struct DIE a pointer-typed variable or member points to."""
    if "DW_AT_type" not in declared.attributes:
        return None
    pointer = strip_qualifiers(declared.get_DIE_from_attribute("DW_AT_type"))
    if pointer is None or pointer.tag != "DW_TAG_pointer_type":
        return None
    if "DW_AT_type" not in pointer.attributes:
        return None
    return strip_qualifiers(pointer.get_DIE_from_attribute("DW_AT_type"))


def register_ranges(
    die: DIE, structs: DWARFExprParser, locations: LocationParser, pc_range: tuple[int, int]
) -> Iterator[tuple[int, int, str]]:
    """[start, end) and register of each piece of a location list that is a register
    (a single location: over the whole function)."""
    attr = die.attributes["DW_AT_location"]
    parsed = locations.parse_from_attribute(attr, die.cu["version"], die)
    if not isinstance(parsed, list):
        register = only_register(structs.parse_expr(parsed.loc_expr))
        if register is not None:
            yield pc_range[0], pc_range[1], register
        return
    base = die.cu.get_top_DIE().attributes.get("DW_AT_low_pc")
    base_address = base.value if base is not None else 0
    for entry in parsed:
        if isinstance(entry, BaseAddressEntry):
            base_address = entry.base_address
        elif isinstance(entry, LocationEntry):
            register = only_register(structs.parse_expr(entry.loc_expr))
            offset = 0 if entry.is_absolute else base_address
            if register is not None:
                yield entry.begin_offset + offset, entry.end_offset + offset, register


def only_register(ops: list) -> str | None:
    if len(ops) != 1 or not ops[0].op_name.startswith("DW_OP_reg"):
        return None
    number = int(ops[0].op_name[len("DW_OP_reg") :])
    return DWARF_REGISTERS[number] if number < len(DWARF_REGISTERS) else None


def full_register(insn: CsInsn, reg: int) -> str:
    """The 64-bit register a (sub)register belongs to: eax -> rax, r8d -> r8."""
    name = insn.reg_name(reg)
    if name.startswith("r") and name[1:].rstrip("dwb").isdigit():
        return name.rstrip("dwb")
    return "r" + name[-2:] if len(name) == 3 and name[0] == "e" else name


class Typing:
    """Pointers of one function, asked per instruction."""

    def __init__(self, code: list[CsInsn], known: list[Variable]) -> None:
        self.code = code
        self.at = {insn.address: i for i, insn in enumerate(code)}
        self.known = known

    def access(self, vaddr: int) -> tuple[Pointer, int] | None:
        """The pointer an instruction's `disp(reg)` operand goes through, and disp."""
        index = self.at.get(vaddr)
        if index is None:
            return None
        operand = memory_operand(self.code[index])
        if operand is None:
            return None
        base, disp = operand
        pointer = self.pointer_in(base, index, MEMBER_DEPTH)
        return (pointer, disp) if pointer is not None else None

    def pointer_in(self, register: str, index: int, depth: int) -> Pointer | None:
        vaddr = self.code[index].address
        for variable in self.known:
            if any(s <= vaddr < e and r == register for s, e, r in variable.ranges):
                return variable.pointer
        if depth == 0:
            return None
        writer = self.last_write(register, index)
        if writer is None:
            return None
        loaded = load_into(self.code[writer], register)
        if loaded is None:
            return None
        holder = self.pointer_in(loaded[0], writer, depth - 1)
        return member_pointer(holder, loaded[1]) if holder is not None else None

    def last_write(self, register: str, index: int) -> int | None:
        for i in range(index - 1, max(-1, index - 1 - BACKWARD), -1):
            insn = self.code[i]
            if insn.mnemonic in ENDS_STRAIGHT_LINE:
                return None
            _read, written = insn.regs_access()
            if any(full_register(insn, reg) == register for reg in written):
                return i
        return None


def memory_operand(insn: CsInsn) -> tuple[str, int] | None:
    """(base register, disp) of a `disp(reg)` operand without an index register."""
    for op in insn.operands:
        if op.type == X86_OP_MEM:
            mem = op.mem
            if mem.base == X86_REG_INVALID or mem.index != X86_REG_INVALID:
                return None
            return full_register(insn, mem.base), int(mem.disp)
    return None


def load_into(insn: CsInsn, register: str) -> tuple[str, int] | None:
    """(base, disp) when insn is `mov register, disp(base)` (8 bytes)."""
    if insn.mnemonic != "mov" or len(insn.operands) != 2:
        return None
    target, source = insn.operands
    if target.type != X86_OP_REG or full_register(insn, target.reg) != register:
        return None
    if source.type != X86_OP_MEM or source.size != 8:
        return None
    return memory_operand(insn)


def member_pointer(holder: Pointer, offset: int) -> Pointer | None:
    """The pointer-to-struct member of holder's struct at offset, as a Pointer."""
    for member in holder.pointee.iter_children():
        if member.tag != "DW_TAG_member":
            continue
        location = member.attributes.get("DW_AT_data_member_location")
        if location is None or location.value != offset:
            continue
        pointee = pointee_die(member)
        struct = struct_of(pointee) if pointee is not None else None
        if pointee is None or struct is None:
            return None
        name = f"{holder.name}->{attr_text(member, 'DW_AT_name')}"
        return Pointer(name, "member", struct, pointee)
    return None
