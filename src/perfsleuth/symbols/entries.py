"""Where a program's functions begin: the source file and line of each one's entry
instruction, from its symbol table and debug info (llvm-symbolizer).

A cachegrind file lists every function's counts under each source file its lines are
in (the code inlined from a header under the header), and says nothing of where the
function itself is: the import took the first of those files in the file's order, so
brotli's CreateBackwardReferencesNH6 (backward_references_inc.h:15) was
platform.h:332, a memcpy inlined into it, and lz4's
LZ4HC_compress_generic_noDictCtx.part.0 (lz4hc.c) was lz4.c:394.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..binaries import STT_FUNC, binary_at
from .symbolizer import Symbolizer

Site = tuple[str, int]


def entry_sites(program: str, functions: Iterable[str]) -> dict[str, Site]:
    """{function: (file, line)} for the FUNCTIONS the ELF file PROGRAM defines and its
    debug info places; {} when it is not a readable ELF file or has no symbols."""
    binary = binary_at(program)
    if binary is None:
        return {}
    wanted = set(functions)
    table = ".symtab" if binary.section(".symtab") else ".dynsym"
    addresses: dict[str, int] = {}
    for symbol in binary.symbols(table, frozenset({STT_FUNC})):
        if symbol.name in wanted and symbol.defined and symbol.value:
            addresses.setdefault(symbol.name, symbol.value)
    if not addresses:
        return {}
    frames = Symbolizer().symbolize_vaddrs((program, a) for a in addresses.values())
    out: dict[str, Site] = {}
    for name, address in addresses.items():
        chain = frames.get((program, address), ())
        outer = chain[-1] if chain else None
        if outer is not None and outer.file and outer.line > 0:
            out[name] = (outer.file, outer.line)
    return out
