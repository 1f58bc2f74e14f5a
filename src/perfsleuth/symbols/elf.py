"""ELF facts the symbolizer needs: build-ids, PT_LOAD segments, finding a DSO.

Samples give addresses as offsets into the DSO *file* (that is what the mmap
tables of perf.data give directly); llvm-symbolizer wants the address the ELF
itself uses (its "virtual address"). PT_LOAD segments map one to the other.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

DEBUG_DIRS = ("/usr/lib/debug",)


@dataclass(frozen=True)
class ElfInfo:
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


@lru_cache(maxsize=4096)
def elf_info(path: str) -> ElfInfo | None:
    """Build-id, PT_LOAD segments and symbol presence of an ELF file; None if not ELF."""
    if not os.path.isfile(path):  # never open devices or FIFOs
        return None
    try:
        with open(path, "rb") as f:
            return _parse_elf(path, f)
    except (OSError, ELFError, ValueError, KeyError, AttributeError, struct.error):
        return None


def _parse_elf(path: str, f: BinaryIO) -> ElfInfo | None:
    ident = f.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF":
        return None
    if ident[4] != 2 or ident[5] != 1:  # not 64-bit little-endian: use pyelftools
        return _parse_elf_slow(path, f)
    (entry, phoff, shoff) = struct.unpack_from("<QQQ", ident, 0x18)
    (phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from("<HHHHH", ident, 0x36)
    segments = []
    notes: list[tuple[int, int]] = []
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _flags, off, vaddr, _paddr, filesz, memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", ph, i * phentsize
        )
        if p_type == 1:  # PT_LOAD
            segments.append((off, filesz, vaddr, memsz))
        elif p_type == 4:  # PT_NOTE
            notes.append((off, filesz))
    has_symtab = has_debug = False
    if shoff and shnum:
        f.seek(shoff)
        sh = f.read(shentsize * shnum)
        headers = [struct.unpack_from("<IIQQQQIIQQ", sh, i * shentsize) for i in range(shnum)]
        if shstrndx < shnum:
            str_off, str_size = headers[shstrndx][4], headers[shstrndx][5]
            f.seek(str_off)
            names = f.read(str_size)
            for h in headers:
                name = names[h[0] : names.find(b"\0", h[0])]
                if name == b".symtab":
                    has_symtab = True
                elif name == b".debug_info" and h[1] != 8:  # not SHT_NOBITS
                    has_debug = True
                elif h[1] == 7 and not notes:  # SHT_NOTE, when no PT_NOTE
                    notes.append((h[4], h[5]))
    build_id = ""
    for off, size in notes:
        f.seek(off)
        data = f.read(min(size, 1 << 16))
        pos = 0
        while pos + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name_end = pos + 12 + ((namesz + 3) & ~3)
            desc = data[name_end : name_end + descsz]
            if ntype == 3 and data[pos + 12 : pos + 12 + namesz].rstrip(b"\0") == b"GNU":
                build_id = desc.hex()
                break
            pos = name_end + ((descsz + 3) & ~3)
        if build_id:
            break
    return ElfInfo(path, build_id, tuple(segments), has_symtab, has_debug, entry)


def _parse_elf_slow(path: str, f: BinaryIO) -> ElfInfo | None:
    f.seek(0)
    elf = ELFFile(f)
    segments = []
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD":
            segments.append((seg["p_offset"], seg["p_filesz"], seg["p_vaddr"], seg["p_memsz"]))
    build_id = ""
    has_symtab = False
    has_debug = False
    for sec in elf.iter_sections():
        if sec.name == ".symtab":
            has_symtab = True
        elif sec.name == ".debug_info":
            has_debug = sec["sh_type"] != "SHT_NOBITS"
        elif sec["sh_type"] == "SHT_NOTE" and not build_id:
            for note in sec.iter_notes():  # type: ignore[attr-defined]
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    build_id = str(note["n_desc"])
                    break
    return ElfInfo(path, build_id, tuple(segments), has_symtab, has_debug, elf["e_entry"])


def build_id_of(path: str) -> str:
    """The GNU build-id of an ELF file as hex, '' when none or unreadable."""
    info = elf_info(path)
    return info.build_id if info else ""


def build_id_paths(build_id: str) -> list[str]:
    """Where a file with this build-id may live: debug files and perf's build-id cache."""
    if len(build_id) < 3:
        return []
    head, tail = build_id[:2], build_id[2:]
    out = [os.path.join(d, ".build-id", head, tail + ".debug") for d in DEBUG_DIRS]
    home = os.environ.get("HOME") or str(Path.home())
    cache = os.path.join(home, ".debug", ".build-id", head, tail)
    out += [os.path.join(cache, n) for n in ("elf", "debug", "vdso")] + [cache]
    return out


def find_dso(path: str, build_id: str = "") -> str | None:
    """The file to symbolize `path` with.

    The recorded path when it still exists and its build-id matches (or none
    was recorded); else a file found by build-id under /usr/lib/debug/.build-id
    or perf's ~/.debug cache; else the recorded path even with a different
    build-id (better than nothing; the caller may flag it); else None.
    """
    exists = bool(path) and path.startswith("/") and os.path.isfile(path)
    if exists and (not build_id or build_id_of(path) in ("", build_id)):
        return path
    if build_id:
        for cand in build_id_paths(build_id):
            if os.path.isfile(cand) and elf_info(cand) is not None:
                return cand
    return path if exists else None
