"""The headers of an ELF file, read with struct: file header, program headers,
section headers and the GNU build-id note.

Any ELF class and byte order is read; nothing past the headers, the section name
table and the notes is touched, so this is cheap enough to run for every DSO of a
run (pyelftools' header objects cost ~100x more).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

PT_LOAD = 1
PT_INTERP = 3
PT_NOTE = 4
PF_X = 1
SHF_ALLOC = 2
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_DYNSYM = 11
ET_REL = 1
ET_DYN = 3
EM_X86_64 = 62
NT_GNU_BUILD_ID = 3
MAX_NOTES_BYTES = 1 << 16


@dataclass(frozen=True)
class ElfInfo:
    """What the symbolizer needs of every DSO: build-id, PT_LOAD segments, symbol presence."""

    path: str
    build_id: str = ""
    # (file offset, file size, virtual address, memory size) per PT_LOAD
    segments: tuple[tuple[int, int, int, int], ...] = field(default_factory=tuple)
    has_symbols: bool = False  # .symtab present (not only .dynsym)
    has_debug_info: bool = False  # .debug_info present
    entry: int = 0  # e_entry: the virtual address the kernel starts the program at

    def offset_to_vaddr(self, offset: int) -> int | None:
        """The ELF virtual address of a file offset, None when no PT_LOAD covers it."""
        for off, filesz, vaddr, memsz in self.segments:
            if off <= offset < off + max(filesz, memsz, 1):
                return vaddr + (offset - off)
        return None


@dataclass(frozen=True)
class Segment:
    type: int  # p_type: PT_LOAD, PT_INTERP, ...
    flags: int  # p_flags: PF_X | PF_W | PF_R
    offset: int
    vaddr: int
    filesz: int
    memsz: int


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int  # sh_type: SHT_PROGBITS, SHT_NOBITS, ...
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int

    @property
    def has_bytes(self) -> bool:
        """False for SHT_NOBITS (.bss, and .text in a separate debug file)."""
        return self.type != SHT_NOBITS


@dataclass(frozen=True)
class Headers:
    elf64: bool
    little_endian: bool
    kind: int  # e_type: ET_EXEC, ET_DYN, ET_REL, ...
    machine: int  # e_machine
    entry: int
    segments: tuple[Segment, ...]
    sections: tuple[Section, ...]
    build_id: str

    def info(self, path: str) -> ElfInfo:
        names = {s.name: s for s in self.sections}
        debug = names.get(".debug_info")
        return ElfInfo(
            path,
            self.build_id,
            tuple(
                (s.offset, s.filesz, s.vaddr, s.memsz) for s in self.segments if s.type == PT_LOAD
            ),
            ".symtab" in names,
            debug is not None and debug.has_bytes,
            self.entry,
        )


# (file header after e_ident, program header, section header) per ELF class
_LAYOUTS = {
    True: ("HHIQQQIHHHHHH", "IIQQQQQQ", "IIQQQQIIQQ"),
    False: ("HHIIIIIHHHHHH", "IIIIIIII", "IIIIIIIIII"),
}


def read_headers(f: BinaryIO) -> Headers | None:
    """The headers of the ELF file open in f; None when it is not ELF."""
    ident = f.read(16)
    if (
        len(ident) < 16
        or ident[:4] != b"\x7fELF"
        or ident[4] not in (1, 2)
        or ident[5] not in (1, 2)
    ):
        return None
    elf64, little = ident[4] == 2, ident[5] == 1
    order = "<" if little else ">"
    file_fmt, ph_fmt, sh_fmt = (order + fmt for fmt in _LAYOUTS[elf64])
    head = f.read(struct.calcsize(file_fmt))
    (
        kind,
        machine,
        _v,
        entry,
        phoff,
        shoff,
        _fl,
        _eh,
        phentsize,
        phnum,
        shentsize,
        shnum,
        shstrndx,
    ) = struct.unpack(file_fmt, head)
    segments = _segments(f, ph_fmt, elf64, phoff, phentsize, phnum)
    sections = _sections(f, sh_fmt, shoff, shentsize, shnum, shstrndx)
    notes = [(s.offset, s.filesz) for s in segments if s.type == PT_NOTE] or [
        (s.offset, s.size) for s in sections if s.type == SHT_NOTE
    ]
    return Headers(
        elf64, little, kind, machine, entry, segments, sections, _build_id(f, order, notes)
    )


def _rows(f: BinaryIO, fmt: str, offset: int, entsize: int, count: int) -> list[tuple]:
    """The entries of a header table (program or section headers), as unpacked tuples."""
    if not offset or not count or entsize < struct.calcsize(fmt):
        return []
    f.seek(offset)
    table = f.read(entsize * count)
    return [
        struct.unpack_from(fmt, table, i * entsize)
        for i in range(min(count, len(table) // entsize))
    ]


def _segments(
    f: BinaryIO, fmt: str, elf64: bool, offset: int, entsize: int, count: int
) -> tuple[Segment, ...]:
    out = []
    for fields in _rows(f, fmt, offset, entsize, count):
        if elf64:
            p_type, flags, off, vaddr, _paddr, filesz, memsz, _align = fields
        else:
            p_type, off, vaddr, _paddr, filesz, memsz, flags, _align = fields
        out.append(Segment(p_type, flags, off, vaddr, filesz, memsz))
    return tuple(out)


def _sections(
    f: BinaryIO, fmt: str, offset: int, entsize: int, count: int, names_index: int
) -> tuple[Section, ...]:
    rows = _rows(f, fmt, offset, entsize, count)
    names = b""
    if names_index < len(rows):
        f.seek(rows[names_index][4])
        names = f.read(rows[names_index][5])
    return tuple(
        Section(i, _name(names, row[0]), row[1], row[2], row[3], row[4], row[5], row[6], row[9])
        for i, row in enumerate(rows)
    )


def _name(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _build_id(f: BinaryIO, order: str, notes: list[tuple[int, int]]) -> str:
    for offset, size in notes:
        f.seek(offset)
        data = f.read(min(size, MAX_NOTES_BYTES))
        pos = 0
        while pos + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from(order + "III", data, pos)
            name_end = pos + 12 + ((namesz + 3) & ~3)
            if (
                ntype == NT_GNU_BUILD_ID
                and data[pos + 12 : pos + 12 + namesz].rstrip(b"\0") == b"GNU"
            ):
                return data[name_end : name_end + descsz].hex()
            pos = name_end + ((descsz + 3) & ~3)
    return ""
