"""The compile units a binary's DWARF describes: source, folder, producer, language.

GCC records its command line in DW_AT_producer ("GNU C17 12.2.0 -march=x86-64 -g
-O0"); clang records only its version unless built with -grecord-command-line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from elftools.dwarf.dwarfinfo import DWARFInfo


@cache
def _languages() -> dict[int, str]:
    # pyelftools' DWARF modules load with the first DWARF read (0.025 CPU-s)
    from elftools.dwarf.enums import ENUM_DW_LANG

    return {code: name.removeprefix("DW_LANG_") for name, code in ENUM_DW_LANG.items()}


@dataclass(frozen=True)
class CompileUnit:
    name: str  # DW_AT_name: the source file as the compiler was given it
    comp_dir: str  # DW_AT_comp_dir: the folder the compiler ran in
    producer: str  # DW_AT_producer
    language: str  # DW_AT_language without DW_LANG_: "C11", "C_plus_plus_14", "Rust"; "" unknown
    offset: int  # of the unit in .debug_info, for DWARFInfo.get_CU_at

    @property
    def path(self) -> str:
        """The source file, absolute when the comp dir is known."""
        return os.path.join(self.comp_dir, self.name)

    @property
    def flags(self) -> list[str]:
        """The options the producer string records, in order ([] from plain clang)."""
        return [word for word in self.producer.split() if word.startswith("-")]


def read_compile_units(dwarf: DWARFInfo) -> tuple[CompileUnit, ...]:
    units = []
    for cu in dwarf.iter_CUs():
        attrs = cu.get_top_DIE().attributes
        language = attrs.get("DW_AT_language")
        units.append(
            CompileUnit(
                _text(attrs, "DW_AT_name"),
                _text(attrs, "DW_AT_comp_dir"),
                _text(attrs, "DW_AT_producer"),
                _languages().get(language.value, "") if language is not None else "",
                cu.cu_offset,
            )
        )
    return tuple(units)


def _text(attrs: dict, name: str) -> str:
    attr = attrs.get(name)
    if attr is None:
        return ""
    value = attr.value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
