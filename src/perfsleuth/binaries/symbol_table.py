"""The entries of an ELF symbol table (.symtab or .dynsym), read with struct."""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import NamedTuple

STT_OBJECT = 1
STT_FUNC = 2
STT_GNU_IFUNC = 10
STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00  # from here on st_shndx is special (SHN_ABS, SHN_COMMON, ...)

# (name, value, size, info, shndx) in file order, per ELF class
_ENTRY = {True: ("IBBHQQ", (0, 4, 5, 1, 3)), False: ("IIIBBH", (0, 1, 2, 3, 5))}


class Symbol(NamedTuple):
    name: str
    value: int  # st_value: the virtual address of a defined function
    size: int
    type: int  # STT_FUNC, STT_OBJECT, ...
    binding: int  # STB_LOCAL, STB_GLOBAL, STB_WEAK
    section: int  # st_shndx: SHN_UNDEF for an imported symbol

    @property
    def is_function(self) -> bool:
        return self.type == STT_FUNC

    @property
    def defined(self) -> bool:
        return self.section != SHN_UNDEF

    @property
    def in_section(self) -> bool:
        """Defined in a real section (`section` indexes Binary.sections)."""
        return SHN_UNDEF < self.section < SHN_LORESERVE


def parse_symbols(
    table: bytes,
    strings: bytes,
    elf64: bool,
    little_endian: bool,
    types: frozenset[int] | None = None,
) -> list[Symbol]:
    """The entries of a symbol table whose string table is `strings` (the null entry
    too), only those of `types` when given: a big library's .dynsym has tens of thousands."""
    fmt, order = _ENTRY[elf64]
    entry = struct.Struct(("<" if little_endian else ">") + fmt)
    in_order = itemgetter(*order)
    out = []
    usable = len(table) - len(table) % entry.size
    for fields in entry.iter_unpack(table[:usable]):
        name_at, value, size, info, section = in_order(fields)
        if types is not None and info & 0xF not in types:
            continue
        end = strings.find(b"\0", name_at)
        name = strings[name_at : end if end >= 0 else len(strings)].decode("utf-8", "replace")
        out.append(Symbol(name, value, size, info & 0xF, info >> 4, section))
    return out
