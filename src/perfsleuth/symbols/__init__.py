"""address -> function, inline chain, file:line, DSO, build-id.

Symbolizer().symbolize_offsets([(path, build_id, file_offset), ...])
    -> {(path, offset): (Frame, ...)}        inline chain, leaf first
Symbolizer().symbolize_vaddrs([(path, vaddr), ...])
Symbolizer().kernel_frame(addr) -> Frame   (from /proc/kallsyms)
binaries(profile_or_dsos) -> [{"path", "build_id", "found", "symbols", "debug_info"}]
"""

from __future__ import annotations

import os
from typing import Any

from ..binaries import ElfInfo, build_id_of, build_id_paths, elf_info, find_dso
from .kallsyms import Kallsyms, kernel_symbols, load_kallsyms
from .symbolizer import KERNEL_DSO, UNKNOWN, Symbolizer, dso_name, find_llvm_symbolizer

__all__ = [
    "KERNEL_DSO",
    "UNKNOWN",
    "ElfInfo",
    "Kallsyms",
    "Symbolizer",
    "binaries",
    "build_id_of",
    "dso_name",
    "elf_info",
    "find_dso",
    "find_llvm_symbolizer",
    "kernel_symbols",
    "load_kallsyms",
]


def binaries(source: Any) -> list[dict]:
    """The DSOs of a run with their build-ids and what symbol data we found for them.

    `source` is a Profile (its dsos are used), or a list of {path,
    build_id} dicts / plain paths. Each entry: path, build_id (recorded, or
    read from the file), found (file used for symbols, "" if none), symbols
    (.symtab present), debug_info (.debug_info present).
    """
    dsos = source.dsos if hasattr(source, "dsos") else source
    out = []
    for d in dsos:
        if isinstance(d, str):
            d = {"path": d, "build_id": ""}
        path = d.get("path", "")
        bid = d.get("build_id", "")
        if path.startswith("["):
            out.append(
                {"path": path, "build_id": bid, "found": "", "symbols": False, "debug_info": False}
            )
            continue
        real = find_dso(path, bid)
        info = elf_info(real) if real else None
        bid = bid or (info.build_id if info else "")
        debug = bool(info and info.has_debug_info) or any(
            (i := elf_info(c)) is not None and i.has_debug_info
            for c in build_id_paths(bid)
            if os.path.isfile(c)
        )
        out.append(
            {
                "path": path,
                "build_id": bid,
                "found": real or "",
                "symbols": bool(info and info.has_symbols) or debug,
                "debug_info": debug,
            }
        )
    return out
