"""Functions by name in a binary's DWARF: the DW_TAG_subprogram entries that have code."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo


def subprograms(dwarf: DWARFInfo) -> dict[str, DIE]:
    """Plain name -> the first entry with code (DW_AT_low_pc) of a function of that
    name; a C++ member or an out-of-line copy is named by the entry it points to."""
    index: dict[str, DIE] = {}
    for cu in dwarf.iter_CUs():
        for die in cu.iter_DIEs():
            if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attributes:
                index.setdefault(attr_text(origin(die), "DW_AT_name"), die)
    return index


def origin(die: DIE) -> DIE:
    """The entry that names and types `die`: its declaration or abstract origin."""
    for attr in ("DW_AT_specification", "DW_AT_abstract_origin"):
        if attr in die.attributes:
            return die.get_DIE_from_attribute(attr)
    return die


def attr_text(die: DIE, name: str) -> str:
    attr = die.attributes.get(name)
    return attr.value.decode(errors="replace") if attr is not None else ""
