"""The binaries layer: every ELF file perfsleuth reads is read here, once.

binary_at(path) -> Binary | None     cached per path and file version
Binary: build_id, sections, segments, info (ElfInfo), section(name), data(part),
        code(address, size), symbols(table, types), dwarf(), compile_units
find_dso(path, build_id) / build_id_paths(build_id): where a recorded DSO is now
"""

from __future__ import annotations

from .binary import DWARF_ERRORS, Binary, binary_at, build_id_of, elf_info
from .compile_units import CompileUnit
from .elf import ET_REL, PF_X, PT_LOAD, ElfInfo, Section, Segment
from .locate import DEBUG_DIRS, build_id_paths, debug_file_paths, find_dso
from .symbol_table import STB_LOCAL, STT_FUNC, STT_GNU_IFUNC, Symbol

__all__ = [
    "DEBUG_DIRS",
    "DWARF_ERRORS",
    "ET_REL",
    "PF_X",
    "PT_LOAD",
    "STB_LOCAL",
    "STT_FUNC",
    "STT_GNU_IFUNC",
    "Binary",
    "CompileUnit",
    "ElfInfo",
    "Section",
    "Segment",
    "Symbol",
    "binary_at",
    "build_id_of",
    "build_id_paths",
    "debug_file_paths",
    "elf_info",
    "find_dso",
]
