"""Global and static variables whose type is a struct or an array of structs, from
DWARF, and the recorded accesses that fall inside them.

A variable at a fixed address has DW_AT_location `DW_OP_addr ADDR` (or, in clang's
DWARF 5, `DW_OP_addrx INDEX` into .debug_addr); its runtime address is ADDR plus the
executable's load base, which the trace already knows. Thread-local variables (their
location is computed per thread) are left out. An array of structs is laid out per
element: an access belongs to element (address - start) // element size.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from elftools.common.exceptions import DWARFError, ELFError
from elftools.dwarf.die import DIE
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.dwarfinfo import DWARFInfo

from ..binaries import binary_at
from ..binaries.subprograms import attr_text
from .struct_types import Struct, struct_elements
from .trace import Trace

# Scopes whose children may declare variables at fixed addresses (function statics too).
SCOPES = ("DW_TAG_subprogram", "DW_TAG_lexical_block", "DW_TAG_namespace")
FIXED_ADDRESS_OPS = ("DW_OP_addr", "DW_OP_addrx", "DW_OP_GNU_addr_index")


@dataclass(frozen=True, eq=False)  # one per DIE: hashed by identity
class StructVariable:
    """A variable of struct type (elements == 1) or an array of `elements` structs."""

    name: str
    address: int  # link-time
    struct: Struct
    elements: int
    external: bool  # a global; otherwise file- or function-static

    @property
    def size(self) -> int:
        return self.struct.size * self.elements


@dataclass
class Visit:
    """The accesses of one call that fall inside one object (one array element)."""

    call: int
    start: int  # runtime address of the object
    accesses: list


@lru_cache(maxsize=8)
def struct_variables(executable: str) -> tuple[StructVariable, ...]:
    """The executable's fixed-address struct variables by address; none without DWARF."""
    binary = binary_at(executable)
    dwarf = binary.dwarf() if binary else None
    if dwarf is None:
        return ()
    try:
        found = [
            variable
            for cu in dwarf.iter_CUs()
            for die in variables_in(cu.get_top_DIE())
            if (variable := struct_variable(dwarf, die)) is not None
        ]
    except (ELFError, DWARFError):
        return ()
    return tuple(sorted(found, key=lambda v: v.address))


def variables_in(scope: DIE) -> Iterator[DIE]:
    for child in scope.iter_children():
        if child.tag == "DW_TAG_variable":
            yield child
        elif child.tag in SCOPES:
            yield from variables_in(child)


def struct_variable(dwarf: DWARFInfo, die: DIE) -> StructVariable | None:
    address = fixed_address(dwarf, die)
    if address is None:
        return None
    declared = (
        die.get_DIE_from_attribute("DW_AT_specification")
        if "DW_AT_specification" in die.attributes
        else die
    )
    if "DW_AT_type" not in declared.attributes:
        return None
    resolved = struct_elements(declared.get_DIE_from_attribute("DW_AT_type"))
    if resolved is None or resolved[0].size == 0:
        return None
    struct, elements = resolved
    return StructVariable(
        name=attr_text(declared, "DW_AT_name") or "(anonymous)",
        address=address,
        struct=struct,
        elements=elements,
        external="DW_AT_external" in die.attributes or "DW_AT_external" in declared.attributes,
    )


def fixed_address(dwarf: DWARFInfo, die: DIE) -> int | None:
    """The link-time address of a variable whose location is one address operation."""
    location = die.attributes.get("DW_AT_location")
    if location is None or not isinstance(location.value, list):
        return None
    try:
        ops = DWARFExprParser(die.cu.structs).parse_expr(location.value)
        if len(ops) != 1 or ops[0].op_name not in FIXED_ADDRESS_OPS:
            return None
        if ops[0].op_name == "DW_OP_addr":
            return int(ops[0].args[0])
        return int(dwarf.get_addr(die.cu, ops[0].args[0]))
    except (DWARFError, KeyError, ValueError, IndexError):
        return None


def touched(
    variables: tuple[StructVariable, ...], trace: Trace
) -> dict[StructVariable, list[Visit]]:
    """Per variable the calls' data accesses reach, one visit per (call, element)."""
    starts = [v.address + trace.base for v in variables]
    visits: dict[StructVariable, dict[tuple[int, int], Visit]] = {}
    for number, call in enumerate(trace.calls):
        for access in call:
            kind, address = access[0], access[1]
            index = bisect_right(starts, address) - 1
            if kind == "I" or index < 0 or address >= starts[index] + variables[index].size:
                continue
            variable = variables[index]
            element = (address - starts[index]) // variable.struct.size
            by_element = visits.setdefault(variable, {})
            visit = by_element.get((number, element))
            if visit is None:
                visit = Visit(number, starts[index] + element * variable.struct.size, [])
                by_element[(number, element)] = visit
            visit.accesses.append(access)
    return {v: list(by_element.values()) for v, by_element in visits.items()}


def inside_one(variables: tuple[StructVariable, ...], base: int) -> Callable[[int], bool]:
    """Whether a runtime address lies inside one of the variables."""
    starts = [v.address + base for v in variables]

    def inside(address: int) -> bool:
        index = bisect_right(starts, address) - 1
        return index >= 0 and address < starts[index] + variables[index].size

    return inside
