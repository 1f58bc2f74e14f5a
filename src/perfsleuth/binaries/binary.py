"""One ELF file as it is on disk now: headers, sections, symbols, DWARF.

`binary_at(path)` is the only way in. A Binary is cached per path and file version
(device, inode, size, mtime), so a file rebuilt in place while `serve` runs is read
again, and every package asks the same object instead of parsing the file once
more. The headers are read when the Binary is made; section bytes and symbol
tables each time they are asked for (a big library's symbols are megabytes of
Python objects the always-on agent must not keep); the DWARF of the few most
recent binaries is kept, since the advisor, the source finder and the cache
views each walk it. No file stays open: every read opens and closes it.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
from collections import OrderedDict
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from elftools.common.exceptions import DWARFError, ELFError

from .compile_units import CompileUnit, read_compile_units
from .elf import (
    EM_X86_64,
    ET_DYN,
    ET_REL,
    PT_INTERP,
    SHF_ALLOC,
    SHT_DYNSYM,
    SHT_PROGBITS,
    SHT_SYMTAB,
    ElfInfo,
    Headers,
    Section,
    Segment,
    read_headers,
)
from .subprograms import subprograms
from .symbol_table import Symbol, parse_symbols

if TYPE_CHECKING:
    from elftools.dwarf.aranges import ARanges
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo

MAX_BINARIES = 4096  # headers only: a few KB each; a host has a few thousand DSOs
MAX_DWARF = 8  # parsed DWARF: megabytes each
# What a damaged or foreign file makes pyelftools raise while reading DWARF.
DWARF_ERRORS = (
    OSError,
    ELFError,
    DWARFError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    UnicodeDecodeError,
    struct.error,
)

_CACHE: OrderedDict[str, tuple[tuple[int, ...], Binary | None]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


class Binary:
    def __init__(self, path: str, headers: Headers) -> None:
        self.path = path
        self.headers = headers

    def __repr__(self) -> str:
        return f"Binary({self.path!r}, build_id={self.build_id!r})"

    @property
    def build_id(self) -> str:
        """The GNU build-id as hex, '' when the file has none."""
        return self.headers.build_id

    @property
    def sections(self) -> tuple[Section, ...]:
        return self.headers.sections

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self.headers.segments

    @cached_property
    def info(self) -> ElfInfo:
        return self.headers.info(self.path)

    @property
    def is_x86_64(self) -> bool:
        return self.headers.machine == EM_X86_64

    @property
    def position_independent(self) -> bool:
        """ET_DYN (a PIE or a shared library): loaded at an address chosen at run time."""
        return self.headers.kind == ET_DYN

    @property
    def relocatable(self) -> bool:
        """An object file (ET_REL): its symbols are offsets into their sections."""
        return self.headers.kind == ET_REL

    @property
    def dynamic(self) -> bool:
        """Started by the dynamic loader (PT_INTERP), so LD_PRELOAD reaches it."""
        return any(s.type == PT_INTERP for s in self.segments)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def data(self, part: Section | Segment) -> bytes:
        """The bytes of a section or of a segment's file image (b"" for SHT_NOBITS)."""
        if isinstance(part, Segment):
            return self._read(part.offset, part.filesz)
        return self._read(part.offset, part.size) if part.has_bytes else b""

    def code(self, address: int, size: int) -> bytes | None:
        """The bytes at a virtual address, from the loaded SHT_PROGBITS section holding it."""
        for s in self.sections:
            if (
                s.type == SHT_PROGBITS
                and s.flags & SHF_ALLOC
                and s.addr <= address < s.addr + s.size
            ):
                return self._read(s.offset + address - s.addr, min(size, s.addr + s.size - address))
        return None

    def symbols(
        self, table: str | None = None, types: frozenset[int] | None = None
    ) -> list[Symbol]:
        """The entries of one symbol table (".symtab", ".dynsym"), or of all of them in
        file order; only those of `types` (STT_FUNC, ...) when given."""
        tables = [
            s
            for s in self.sections
            if s.type in (SHT_SYMTAB, SHT_DYNSYM) and (table is None or s.name == table)
        ]
        out: list[Symbol] = []
        for tab in tables:
            if not tab.has_bytes or tab.link >= len(self.sections):
                continue
            strings = self.data(self.sections[tab.link])
            out += parse_symbols(
                self.data(tab), strings, self.headers.elf64, self.headers.little_endian, types
            )
        return out

    def dwarf(self) -> DWARFInfo | None:
        """The parsed DWARF (kept for the most recent few binaries); None without
        .debug_info or when it cannot be read."""
        if self.section(".debug_info") is None and self.section(".zdebug_info") is None:
            return None
        return _dwarf_of(self)

    @cached_property
    def compile_units(self) -> tuple[CompileUnit, ...]:
        """Every compile unit of the DWARF; () without debug info."""
        dwarf = self.dwarf()
        if dwarf is None:
            return ()
        try:
            return read_compile_units(dwarf)
        except DWARF_ERRORS:
            return ()

    def unit_at(self, address: int) -> CompileUnit | None:
        """The compile unit whose code holds the virtual address (DWARF's
        .debug_aranges); None without them or when no unit does."""
        offset = self._unit_ranges.cu_offset_at_addr(address) if self._unit_ranges else None
        return self._units_by_offset.get(offset) if offset is not None else None

    @cached_property
    def _units_by_offset(self) -> dict[int, CompileUnit]:
        return {u.offset: u for u in self.compile_units}

    @cached_property
    def _unit_ranges(self) -> ARanges | None:
        dwarf = self.dwarf()
        try:
            return dwarf.get_aranges() if dwarf is not None else None
        except DWARF_ERRORS:
            return None

    def subprogram(self, name: str) -> DIE | None:
        """The DWARF entry with code of the function with this plain (unqualified,
        parameterless) name; None without debug info or such a function."""
        return _subprograms_of(self).get(name)

    def _read(self, offset: int, size: int) -> bytes:
        """b"" once the file is gone: every caller treats that as "nothing there"."""
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                return f.read(size)
        except OSError:
            return b""


@lru_cache(maxsize=MAX_DWARF)
def _dwarf_of(binary: Binary) -> DWARFInfo | None:
    # pyelftools copies each DWARF section into memory, so the file can be closed. Its
    # ELF and DWARF parser loads here: reading symbols and headers needs none (0.025 CPU-s).
    from elftools.elf.elffile import ELFFile

    try:
        with open(binary.path, "rb") as f:
            return ELFFile(f).get_dwarf_info()
    except DWARF_ERRORS:
        return None


@lru_cache(maxsize=MAX_DWARF)
def _subprograms_of(binary: Binary) -> dict[str, DIE]:
    # beside _dwarf_of, not on the Binary: its entries hold the whole parsed DWARF
    dwarf = binary.dwarf()
    if dwarf is None:
        return {}
    try:
        return subprograms(dwarf)
    except DWARF_ERRORS:
        return {}


def binary_at(path: str | os.PathLike[str]) -> Binary | None:
    """The ELF file at path as it is now; None when it is no readable regular ELF file."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):  # never open devices or FIFOs
        return None
    version = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _CACHE_LOCK:
        hit = _CACHE.get(name)
        if hit is not None and hit[0] == version:
            _CACHE.move_to_end(name)
            return hit[1]
    binary = _read_binary(name)
    with _CACHE_LOCK:
        _CACHE[name] = (version, binary)
        _CACHE.move_to_end(name)
        while len(_CACHE) > MAX_BINARIES:
            _CACHE.popitem(last=False)
    return binary


def _read_binary(path: str) -> Binary | None:
    try:
        with open(path, "rb") as f:
            headers = read_headers(f)
    except (OSError, ValueError, struct.error):
        return None
    return Binary(path, headers) if headers is not None else None


def elf_info(path: str) -> ElfInfo | None:
    """Build-id, PT_LOAD segments and symbol presence of an ELF file; None if not ELF."""
    binary = binary_at(path)
    return binary.info if binary else None


def build_id_of(path: str) -> str:
    """The GNU build-id of an ELF file as hex, '' when none or unreadable."""
    binary = binary_at(path)
    return binary.build_id if binary else ""
