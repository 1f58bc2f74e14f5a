"""Function start addresses of an ELF file without symbols, from .eh_frame_hdr.

A stripped binary has no function names, but every function compiled with
unwind tables (the default on x86-64) still has an FDE, and .eh_frame_hdr
lists their start addresses sorted, for the unwinder's binary search. That is
enough to tell the functions of a stripped binary apart.
"""

from __future__ import annotations

import bisect
import struct
from functools import lru_cache

from ..binaries import binary_at

# DW_EH_PE value formats -> struct codes; the application bits (pcrel, datarel)
# do not change the size.
_FORMATS = {0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}
_DATAREL_SDATA4 = 0x3B  # the table encoding every x86-64 linker writes


@lru_cache(maxsize=256)
def function_starts(path: str) -> tuple[int, ...]:
    """Sorted ELF virtual addresses where functions start; empty if unknown."""
    binary = binary_at(path)
    section = binary.section(".eh_frame_hdr") if binary else None
    if binary is None or section is None:
        return ()
    try:
        return _table_starts(section.addr, binary.data(section))
    except (ValueError, struct.error):
        return ()


def _table_starts(hdr_addr: int, data: bytes) -> tuple[int, ...]:
    version, ptr_enc, count_enc, table_enc = data[:4]
    ptr_fmt = _FORMATS.get(ptr_enc & 0x0F)
    count_fmt = _FORMATS.get(count_enc & 0x0F)
    if version != 1 or ptr_fmt is None or count_fmt is None or table_enc != _DATAREL_SDATA4:
        return ()
    pos = 4 + struct.calcsize(ptr_fmt)
    (count,) = struct.unpack_from(count_fmt, data, pos)
    pos += struct.calcsize(count_fmt)
    count = min(count, (len(data) - pos) // 8)
    pairs = struct.unpack_from(f"<{2 * count}i", data, pos)
    return tuple(sorted(hdr_addr + start for start in pairs[::2]))


def function_start(path: str, vaddr: int) -> int | None:
    """The start of the function containing `vaddr`, None if before the first."""
    starts = function_starts(path)
    i = bisect.bisect_right(starts, vaddr)
    return starts[i - 1] if i else None
