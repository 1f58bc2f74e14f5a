"""Which struct an access's base register points to, for pointers that are neither
the traced function's parameters nor global variables: local pointer variables
(`struct flow *f = &t->flows[i]`, `t + i`) and pointers held in a struct's member
(`s->peer->rx`).

A local: DWARF says in which register a variable lives over which instructions
(its location list); an access `disp(reg)` at an instruction where a pointer-to-
struct variable lives in reg goes through that variable. A member: every write of
the register that reaches the access is a load `mov reg, disp2(base)` where base
points to a struct (a parameter, a local or another member, two levels at most)
whose member at disp2 is a pointer to a struct. An element: an access
`disp(base,index,scale)` where base (or index, at scale 1) points to a struct and
disp is one of its fields, not inside an array member: a field of an element of
the array base points to (clang keeps `f = &t->flows[i]` as base + index and
describes f by a computed location, `DW_OP_breg<base> ... DW_OP_stack_value`,
which names it; without one the layout is the array's, `t->flows[]`); so is an
access `disp(reg)` where reg was written by adding an index to such a pointer
(`add reg, x`, `lea reg, [a + b]`: GCC's `t->flows[i].x`). A stack slot: in a
function that keeps rbp as its frame pointer (-O0, -fno-omit-frame-pointer), a
load `mov reg, disp(rbp)` from where DWARF puts a variable (`DW_OP_fbreg`) loads
that variable.

Registers are followed back over every path in the function's code (direct jumps
included) to their writes, BACKWARD instructions at most. A call is a write of
the registers it returns in (rax, rdx), unless DWARF says the callee, in the
same compilation unit, returns nothing; code that reads any other register after
a call without writing it again relies on its value from before the call (a
callee-saved register, or one GCC's interprocedural register allocation knows the
callee keeps, rax included when it returns nothing), so the search goes on past
it. Reaching the function's entry ends it: a register not placed by DWARF is not
followed further. Not followed:
pointers spilled to the stack by optimised code without a frame pointer
(rsp-relative slots DWARF does not describe) and arrays indexed inside a member
(`s->items[i].x`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

from capstone import CS_GRP_CALL, CS_GRP_JUMP, CsInsn
from capstone.x86 import X86_OP_IMM, X86_OP_MEM, X86_OP_REG, X86_REG_INVALID
from elftools.dwarf.die import DIE
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry, LocationParser

from ..binaries.subprograms import attr_text, origin
from .struct_types import STRUCT_TAGS, Struct, strip_qualifiers, struct_of

BACKWARD = 64  # instructions searched back for the loads of a member pointer
MEMBER_DEPTH = 2  # s->a->b
# DWARF's x86-64 register numbers (DW_OP_reg0 ...), as capstone names them
DWARF_REGISTERS = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                   "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15")  # fmt: skip
VARIABLE_TAGS = ("DW_TAG_variable", "DW_TAG_formal_parameter")
SCOPE_TAGS = ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine")
NO_FALLTHROUGH = frozenset({"ret", "jmp", "ud2", "hlt"})
CFA_ABOVE_RBP = 16  # after `push rbp; mov rbp, rsp`: the return address and the saved rbp
RETURN_REGISTERS = frozenset({"rax", "rdx"})  # what a call writes, System V x86-64
INDEXING_OPS = frozenset({"DW_OP_mul", "DW_OP_shl"})  # base + index * size


@dataclass(frozen=True)
class Pointer:
    """A pointer to a struct: `f` (a local) or `s->peer` (a member's)."""

    name: str
    kind: Literal["parameter", "local", "member"]
    struct: Struct
    pointee: DIE  # the struct's DIE, for its pointer members
    # an element reached by adding an index to an array's pointer: only accesses at a
    # field outside array members go through it
    indexed: bool = False


@dataclass(frozen=True)
class Variable:
    pointer: Pointer
    ranges: tuple[tuple[int, int, str], ...]  # [start, end) ELF addresses, register
    # registers a computed location `base + index * size` starts from: the variable
    # points to an element of the array base points to
    bases: frozenset[str] = frozenset()
    slots: tuple[tuple[int, int, int], ...] = ()  # [start, end), disp(rbp) of its stack slot


@dataclass(frozen=True)
class Operand:
    """A memory operand `disp(base,index,scale)`; index None when there is none."""

    base: str
    index: str | None
    scale: int
    disp: int


def variables(
    subprogram: DIE, pc_range: tuple[int, int], locations: LocationParser, frame: int | None
) -> list[Variable]:
    """The function's pointer-to-struct parameters and locals that DWARF places in
    registers, in rbp-relative stack slots or computes from a register; pc_range:
    the function's [start, end); frame: DW_OP_fbreg's offset from rbp (None: no
    frame pointer)."""
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
        # an inlined callee's parameter is a local of the traced function
        parent = die.get_parent()
        own = parent is not None and parent.offset == subprogram.offset
        own = own and die.tag == "DW_TAG_formal_parameter"
        kind: Literal["parameter", "local"] = "parameter" if own else "local"
        pieces = list(location_pieces(die, structs, locations, pc_range))
        ranges = tuple(
            (start, end, register)
            for start, end, ops in pieces
            if (register := only_register(ops)) is not None
        )
        bases = frozenset(base for _s, _e, ops in pieces if (base := element_base(ops)))
        slots = tuple(
            (start, end, frame + ops[0].args[0])
            for start, end, ops in pieces
            if frame is not None and len(ops) == 1 and ops[0].op_name == "DW_OP_fbreg"
        )
        if ranges or bases or slots:
            name = attr_text(declared, "DW_AT_name")
            pointer = Pointer(name, kind, struct, pointee)
            found.append(Variable(pointer, ranges, bases, slots))
    return found


def frame_base_offset(subprogram: DIE, code: list[CsInsn]) -> int | None:
    """What turns a DW_OP_fbreg offset into an rbp-relative one: 0 when the frame
    base is rbp (clang), CFA_ABOVE_RBP when it is the CFA (GCC) of a function whose
    prologue makes rbp the frame pointer; None otherwise."""
    attr = subprogram.attributes.get("DW_AT_frame_base")
    if attr is None or not isinstance(attr.value, list):
        return None
    ops = DWARFExprParser(subprogram.cu.structs).parse_expr(attr.value)
    names = [op.op_name for op in ops]
    if names == ["DW_OP_reg6"]:
        return 0
    prologue = [f"{i.mnemonic} {i.op_str}" for i in code[:3] if i.mnemonic != "endbr64"]
    if names == ["DW_OP_call_frame_cfa"] and prologue[:2] == ["push rbp", "mov rbp, rsp"]:
        return CFA_ABOVE_RBP
    return None


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


def location_pieces(
    die: DIE, structs: DWARFExprParser, locations: LocationParser, pc_range: tuple[int, int]
) -> Iterator[tuple[int, int, list]]:
    """[start, end) and parsed expression of each piece of a location list (a single
    location: over the whole function)."""
    attr = die.attributes["DW_AT_location"]
    parsed = locations.parse_from_attribute(attr, die.cu["version"], die)
    if not isinstance(parsed, list):
        yield pc_range[0], pc_range[1], structs.parse_expr(parsed.loc_expr)
        return
    base = die.cu.get_top_DIE().attributes.get("DW_AT_low_pc")
    base_address = base.value if base is not None else 0
    for entry in parsed:
        if isinstance(entry, BaseAddressEntry):
            base_address = entry.base_address
        elif isinstance(entry, LocationEntry):
            offset = 0 if entry.is_absolute else base_address
            ops = structs.parse_expr(entry.loc_expr)
            yield entry.begin_offset + offset, entry.end_offset + offset, ops


def element_base(ops: list) -> str | None:
    """The register a computed pointer `base + index * size` starts from:
    `DW_OP_breg<base> 0, ..., DW_OP_mul (or shl), ..., DW_OP_stack_value`."""
    if len(ops) < 3 or ops[-1].op_name != "DW_OP_stack_value":
        return None
    first = ops[0]
    if not first.op_name.startswith("DW_OP_breg") or first.args[0] != 0:
        return None
    if not any(op.op_name in INDEXING_OPS for op in ops):
        return None
    return dwarf_register(first.op_name[len("DW_OP_breg") :])


def only_register(ops: list) -> str | None:
    if len(ops) != 1 or not ops[0].op_name.startswith("DW_OP_reg"):
        return None
    return dwarf_register(ops[0].op_name[len("DW_OP_reg") :])


def dwarf_register(number: str) -> str | None:
    """The register of DW_OP_reg<number> / DW_OP_breg<number> (not DW_OP_regx)."""
    if not number.isdigit() or int(number) >= len(DWARF_REGISTERS):
        return None
    return DWARF_REGISTERS[int(number)]


def full_register(insn: CsInsn, reg: int) -> str:
    """The 64-bit register a (sub)register belongs to: eax -> rax, r8d -> r8."""
    name = insn.reg_name(reg)
    if name.startswith("r") and name[1:].rstrip("dwb").isdigit():
        return name.rstrip("dwb")
    return "r" + name[-2:] if len(name) == 3 and name[0] == "e" else name


class Typing:
    """Pointers of one function, asked per instruction."""

    def __init__(
        self, code: list[CsInsn], known: list[Variable], void: frozenset[int] = frozenset()
    ) -> None:
        """void: the addresses of callees that return nothing."""
        self.code = code
        self.at = {insn.address: i for i, insn in enumerate(code)}
        self.known = known
        self.void = void
        self.jumps_to: dict[int, list[int]] = {}
        for i, insn in enumerate(code):
            target = jump_target(insn)
            if target is not None and target in self.at:
                self.jumps_to.setdefault(self.at[target], []).append(i)

    def access(self, vaddr: int) -> tuple[Pointer, int] | None:
        """The pointer an instruction's memory operand goes through, and disp."""
        index = self.at.get(vaddr)
        if index is None:
            return None
        operand = memory_operand(self.code[index])
        if operand is None:
            return None
        if operand.index is None:
            pointer = self.pointer_in(operand.base, index, MEMBER_DEPTH)
            if pointer is not None and pointer.indexed:
                disp = element_disp(pointer.struct, operand.disp, 1)
                return (pointer, disp) if disp is not None else None
            return (pointer, operand.disp) if pointer is not None else None
        return self.element(operand, index)

    def element(self, operand: Operand, index: int) -> tuple[Pointer, int] | None:
        """The array element `disp(base,index,scale)` reaches: base (or the index, at
        scale 1) points to a struct whose field is at disp."""
        registers = [operand.base]
        if operand.index is not None and operand.scale == 1:
            registers.append(operand.index)
        for register in registers:
            array = self.pointer_in(register, index, MEMBER_DEPTH)
            disp = element_disp(array.struct, operand.disp, operand.scale) if array else None
            if array is not None and disp is not None:
                return self.element_of(array, register), disp
        return None

    def element_of(self, array: Pointer, register: str) -> Pointer:
        """The local DWARF computes as register + index * size, or `array[]`."""
        for variable in self.known:
            pointer = variable.pointer
            if register in variable.bases and pointer.struct.name == array.struct.name:
                return pointer
        kind: Literal["local", "member"] = "member" if array.kind == "member" else "local"
        name = array.name if array.indexed else f"{array.name}[]"
        return Pointer(name, kind, array.struct, array.pointee)

    def pointer_in(self, register: str, index: int, depth: int) -> Pointer | None:
        vaddr = self.code[index].address
        for variable in self.known:
            if any(s <= vaddr < e and r == register for s, e, r in variable.ranges):
                return variable.pointer
        found: dict[str, Pointer] = {}  # by name: every write must load the same pointer
        for writer in self.reaching_writes(register, index) or ():
            loaded = self.loaded(writer, register, depth) or self.added(writer, register, depth)
            if loaded is None:
                return None
            found[loaded.name] = loaded
        return next(iter(found.values())) if len(found) == 1 else None

    def loaded(self, writer: int, register: str, depth: int) -> Pointer | None:
        """The pointer instruction writer loads into register: a variable from its
        stack slot, or a member of a struct another pointer points to (depth: how
        many more members may be followed; slots do not count)."""
        loaded = load_into(self.code[writer], register)
        return self.in_memory(*loaded, writer, depth) if loaded is not None else None

    def in_memory(self, base: str, disp: int, writer: int, depth: int) -> Pointer | None:
        """The pointer at disp(base): a variable's stack slot, or a member."""
        slot = self.in_slot(disp, self.code[writer].address) if base == "rbp" else None
        if slot is not None or depth == 0:
            return slot
        holder = self.pointer_in(base, writer, depth - 1)
        return member_pointer(holder, disp) if holder is not None else None

    def added(self, writer: int, register: str, depth: int) -> Pointer | None:
        """An element of an array of structs, when writer adds an index to the
        array's pointer: `add register, x` where x (a register, a member or a stack
        slot) or register before it is the pointer, or `lea register, [a + b]` where
        a or b is (GCC's `t->flows[i].x` without a local)."""
        insn = self.code[writer]
        if len(insn.operands) != 2 or depth == 0:
            return None
        target, source = insn.operands
        if target.type != X86_OP_REG or target.size != 8:
            return None
        if full_register(insn, target.reg) != register:
            return None
        operand = memory_operand(insn) if source.type == X86_OP_MEM else None
        array = None
        if insn.mnemonic == "add" and operand is not None and operand.index is None:
            array = self.in_memory(operand.base, operand.disp, writer, depth)
        for summand in summands(insn, register, operand):
            array = array or self.pointer_in(summand, writer, depth - 1)
        return replace(self.element_of(array, register), indexed=True) if array else None

    def in_slot(self, disp: int, vaddr: int) -> Pointer | None:
        for variable in self.known:
            if any(s <= vaddr < e and slot == disp for s, e, slot in variable.slots):
                return variable.pointer
        return None

    def reaching_writes(self, register: str, index: int) -> set[int] | None:
        """The instructions whose write of register reaches instruction index over
        every path back; None when a path reaches the entry or more than BACKWARD
        instructions."""
        writes: set[int] = set()
        seen: set[int] = set()
        todo = self.before(index)
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            insn = self.code[i]
            if len(seen) > BACKWARD:
                return None
            if self.writes(insn, register):
                writes.add(i)
                continue
            earlier = self.before(i)
            if not earlier and not padding(insn):  # the entry, or a jump table's case
                return None
            todo.extend(earlier)
        return writes or None

    def before(self, index: int) -> list[int]:
        """The instructions control reaches index from."""
        previous = index - 1
        falls = previous >= 0 and self.code[previous].mnemonic not in NO_FALLTHROUGH
        return ([previous] if falls else []) + self.jumps_to.get(index, [])

    def writes(self, insn: CsInsn, register: str) -> bool:
        if insn.group(CS_GRP_CALL) and register in RETURN_REGISTERS:
            return direct_target(insn) not in self.void
        _read, written = insn.regs_access()
        return any(full_register(insn, reg) == register for reg in written)


def padding(insn: CsInsn) -> bool:
    """Whether insn is a no-op: the alignment GCC puts after a jump, before a loop's
    start (unordered_dense's probe loop), which no path runs through."""
    if insn.mnemonic == "nop":
        return True
    registers = [op.reg for op in insn.operands if op.type == X86_OP_REG]
    return insn.mnemonic == "xchg" and len(registers) == 2 and registers[0] == registers[1]


def void_callees(subprogram: DIE, code: list[CsInsn]) -> frozenset[int]:
    """The addresses of the functions code calls that DWARF, in the same compilation
    unit, says return nothing (no DW_AT_type), and no function there said to return
    something shares (identical code folded into one)."""
    targets = {t for insn in code if insn.group(CS_GRP_CALL) and (t := direct_target(insn))}
    returns: dict[int, bool] = {}
    for die in subprogram.cu.iter_DIEs() if targets else ():
        low = die.attributes.get("DW_AT_low_pc")
        if die.tag == "DW_TAG_subprogram" and low is not None and low.value in targets:
            typed = "DW_AT_type" in origin(die).attributes
            returns[low.value] = returns.get(low.value, False) or typed
    return frozenset(address for address, typed in returns.items() if not typed)


def summands(insn: CsInsn, register: str, operand: Operand | None) -> list[str]:
    """The registers `add register, reg` or `lea register, [a + b]` adds up that may
    be a pointer: of `lea register, [a + b*8]` only a (boost's `elements + pos*15 + n`:
    the index times 9 by one lea, added times 8 by the next)."""
    source = insn.operands[1]
    if insn.mnemonic == "add" and source.type == X86_OP_REG and source.size == 8:
        return [full_register(insn, source.reg), register]
    if insn.mnemonic != "lea" or operand is None or operand.index is None or operand.disp:
        return []
    return [operand.base, operand.index] if operand.scale == 1 else [operand.base]


def jump_target(insn: CsInsn) -> int | None:
    """The address a direct jump goes to."""
    return direct_target(insn) if insn.group(CS_GRP_JUMP) else None


def direct_target(insn: CsInsn) -> int | None:
    """The address a direct jump or call goes to."""
    if len(insn.operands) != 1:
        return None
    operand = insn.operands[0]
    return int(operand.imm) if operand.type == X86_OP_IMM else None


def element_disp(struct: Struct, disp: int, scale: int) -> int | None:
    """Where in an element of an array of struct an access at disp from an element's
    pointer falls: disp, or for a negative disp, disp + size in the element before
    (hashbrown's buckets point one past their element: `-0x4(%rcx)` is the last
    field's)."""
    inside = disp + struct.size if -struct.size <= disp < 0 else disp
    return inside if field_offset(struct, inside, scale) else None


def field_offset(struct: Struct, disp: int, scale: int) -> bool:
    """Whether disp is where a field of struct starts or lies, outside array members
    (then the index picks the element, not an item of the member's array)."""
    if scale not in (1, struct.size) or not 0 <= disp < struct.size:
        return False
    arrays = (f.span() for f in struct.fields if "[" in f.type_name)
    return not any(start <= disp < max(end, start + 1) for start, end in arrays)  # `data[]` too


def memory_operand(insn: CsInsn) -> Operand | None:
    """The `disp(base,index,scale)` operand of insn, with a base register."""
    for op in insn.operands:
        if op.type == X86_OP_MEM:
            mem = op.mem
            if mem.base == X86_REG_INVALID:
                return None
            index = full_register(insn, mem.index) if mem.index != X86_REG_INVALID else None
            return Operand(full_register(insn, mem.base), index, int(mem.scale), int(mem.disp))
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
    operand = memory_operand(insn)
    if operand is None or operand.index is not None:
        return None
    return operand.base, operand.disp


def member_pointer(holder: Pointer, offset: int) -> Pointer | None:
    """The pointer-to-struct member of holder's struct at offset, as a Pointer, also
    one inside a member struct or base class (`map->m_ht.m_buckets`: C++ containers
    keep their state in a member, tsl::robin_map in `m_ht`, whose bucket array's
    pointer sits at 0x20 of the map; tsl::ordered_map's values vector's data pointer
    five members and base classes down, `m_ht.m_values._M_impl._M_start`)."""
    found = member_at(holder.pointee, offset)
    if found is None:
        return None
    path, member = found
    pointee = pointee_die(member)
    struct = struct_of(pointee) if pointee is not None else None
    if pointee is None or struct is None:
        return None
    return Pointer(f"{holder.name}->{path}", "member", struct, pointee)


def member_at(struct: DIE, offset: int) -> tuple[str, DIE] | None:
    """The member that starts at offset of struct, by its path (a base class adds
    nothing to it), looking into member structs and base classes at every level down:
    a struct holds them by value, so the search ends (a limit of four levels missed
    tsl::ordered_map's vector of pairs, a fifth inside its `m_ht`)."""
    for member in struct.iter_children():
        if member.tag not in ("DW_TAG_member", "DW_TAG_inheritance"):
            continue
        location = member.attributes.get("DW_AT_data_member_location")
        if location is None or not isinstance(location.value, int) or location.value > offset:
            continue
        name = "" if member.tag == "DW_TAG_inheritance" else attr_text(member, "DW_AT_name")
        if location.value == offset and pointee_die(member) is not None:
            return name, member
        typed = "DW_AT_type" in member.attributes
        inner = strip_qualifiers(member.get_DIE_from_attribute("DW_AT_type")) if typed else None
        if inner is None or inner.tag not in STRUCT_TAGS:
            continue
        within = member_at(inner, offset - location.value)
        if within is not None:
            return ".".join(part for part in (name, within[0]) if part), within[1]
    return None
