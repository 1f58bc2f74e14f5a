"""Function start addresses of an ELF file without symbols, from .eh_frame_hdr.

A stripped binary has no function names, but every function compiled with
unwind tables (the default on x86-64) still has an FDE, and .eh_frame_hdr
lists their start addresses sorted, for the unwinder's binary search. That is
enough to tell the functions of a stripped binary apart.
"""

from __future__ import annotations

import bisect
import struct
import sys
from array import array
from collections.abc import Sequence
from functools import lru_cache
from typing import overload

from ..binaries import binary_at
from ..model.profile import UNKNOWN, Frame

# DW_EH_PE value formats -> struct codes; the application bits (pcrel, datarel)
# do not change the size.
_FORMATS = {0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}
_DATAREL_SDATA4 = 0x3B  # the table encoding every x86-64 linker writes


class Starts(Sequence[int]):
    """Sorted start addresses, kept as offsets from the table's own address in one
    array: a big library lists hundreds of thousands, and adding the base to each
    as a Python int was most of the agent's cost of a file's first unnamed frame."""

    def __init__(self, base: int, offsets: array) -> None:
        self.base = base
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [self.base + o for o in self.offsets[i]]
        return self.base + self.offsets[i]

    def before(self, vaddr: int) -> int | None:
        """The last start at or before `vaddr`."""
        i = bisect.bisect_right(self.offsets, vaddr - self.base)
        return self.base + self.offsets[i - 1] if i else None


@lru_cache(maxsize=256)
def function_starts(path: str) -> Starts | tuple[()]:
    """Sorted ELF virtual addresses where functions start; empty if unknown."""
    binary = binary_at(path)
    section = binary.section(".eh_frame_hdr") if binary else None
    if binary is None or section is None:
        return ()
    try:
        return _table_starts(section.addr, binary.data(section))
    except (ValueError, struct.error):
        return ()


def _table_starts(hdr_addr: int, data: bytes) -> Starts | tuple[()]:
    version, ptr_enc, count_enc, table_enc = data[:4]
    ptr_fmt = _FORMATS.get(ptr_enc & 0x0F)
    count_fmt = _FORMATS.get(count_enc & 0x0F)
    if version != 1 or ptr_fmt is None or count_fmt is None or table_enc != _DATAREL_SDATA4:
        return ()
    pos = 4 + struct.calcsize(ptr_fmt)
    (count,) = struct.unpack_from(count_fmt, data, pos)
    pos += struct.calcsize(count_fmt)
    count = min(count, (len(data) - pos) // 8)
    pairs = array("i", data[pos : pos + 8 * count])
    if sys.byteorder != "little":
        pairs.byteswap()
    return Starts(hdr_addr, array("i", sorted(pairs[::2]))) if count else ()


def function_start(path: str, vaddr: int) -> int | None:
    """The start of the function containing `vaddr`, None if before the first."""
    starts = function_starts(path)
    return starts.before(vaddr) if starts else None


def unnamed_frame(real: str | None, name: str, vaddr: int | None, build_id: str) -> Frame:
    """A frame without a symbol, named after its function's start address
    ("[unknown] DSO+0xSTART"), as every recorder names it: the functions of a
    stripped binary stay apart instead of merging into one "[unknown]", and a lock's
    call site is that function, not the thread's clone3. It keeps the build-id and the
    address, so the symbols of that build-id can name it later. `real` is the DSO's
    file here (None when not found), `name` what the frame shows as its DSO."""
    if real is None or vaddr is None:
        return Frame(UNKNOWN, dso=name)
    start = function_start(real, vaddr)
    address = vaddr if build_id else 0
    if start is None:
        return Frame(UNKNOWN, dso=name, build_id=build_id, address=address)
    return Frame(f"{UNKNOWN} {name}+{start:#x}", dso=name, build_id=build_id, address=address)
