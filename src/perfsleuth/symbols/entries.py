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

import os
import re
from collections.abc import Iterable, Mapping

from ..binaries import STT_FUNC, Binary, binary_at, build_id_of
from ..binaries.libraries import interpreter, needed_paths
from ..binaries.locate import debug_file_paths
from .demangle import valgrind_names
from .symbolizer import Symbolizer

Site = tuple[str, int]
RECURSION = re.compile(r"'[0-9]+$")  # callgrind's name of a deeper recursion level: f'2


def entry_sites(
    program: str, functions: Iterable[str], before: float | None = None
) -> dict[str, Site]:
    """{function: (file, line)} for the FUNCTIONS the ELF file PROGRAM defines and its
    debug info places, then those of the shared libraries it loads (DT_NEEDED, then the
    dynamic loader, with their symbol tables from /usr/lib/debug when they ship without
    one: the C library's __printf_fp_l was `localeinfo.h:331`, a helper inlined into it,
    for printf_fp.c:216); a library modified after `before` (a time) is left out. {} when
    PROGRAM is not a readable ELF file or has no symbols."""
    binary = binary_at(program)
    if binary is None:
        return {}
    wanted = set(functions)
    out = _entries(program, binary, wanted)
    loader = interpreter(binary)
    for library in [*needed_paths(binary), *([loader] if loader else [])]:
        left = wanted - out.keys()
        if not left:
            break
        path = str(library)
        if before is not None and os.path.getmtime(path) > before:
            continue  # updated since the run: its lines may not be the ones counted
        found = binary_at(path)
        if found is not None:
            out |= _entries(path, found, left)
    return out


def _entries(path: str, binary: Binary, wanted: set[str]) -> dict[str, Site]:
    """{function: (file, line)} of the WANTED functions the ELF file at PATH defines,
    named as valgrind names them (C++ and Rust symbols demangled: a Rust program's
    tiny::total was core's non_null.rs:1720, an iterator's compare inlined at its entry,
    for its own main.rs:8)."""
    symbols = [s for s in _function_symbols(binary) if s.defined and s.value]
    named = valgrind_names(sorted({s.name for s in symbols}))
    addresses: dict[str, int] = {}
    for symbol in symbols:
        if named[symbol.name] in wanted:
            addresses.setdefault(named[symbol.name], symbol.value)
    if not addresses:
        return {}
    frames = Symbolizer().symbolize_vaddrs((path, a) for a in addresses.values())
    out: dict[str, Site] = {}
    for name, address in addresses.items():
        chain = frames.get((path, address), ())
        outer = chain[-1] if chain else None
        if outer is not None and outer.file and outer.line > 0:
            out[name] = (outer.file, outer.line)
    return out


FUNCTIONS = frozenset({STT_FUNC})


def _function_symbols(binary: Binary) -> list:
    """The function symbols of its .symtab, else of its separate debug file's (found by
    build-id: a Debian library's local functions are there), else of its .dynsym."""
    if binary.section(".symtab") is not None:
        return binary.symbols(".symtab", FUNCTIONS)
    for path in debug_file_paths(build_id_of(binary.path)):
        debug = binary_at(path) if os.path.isfile(path) else None
        if debug is not None and debug.section(".symtab") is not None:
            return debug.symbols(".symtab", FUNCTIONS)
    return binary.symbols(".dynsym", FUNCTIONS)


def counted_entries(
    program: str, self_costs: Mapping[tuple[str, str], Iterable[Site]], before: float | None = None
) -> dict[tuple[str, str], Site]:
    """{(object, function): its entry's counted (file, line)} for the functions of a
    valgrind file (their counted sites in `self_costs`) that PROGRAM, its libraries or the
    loader define (entry_sites), the site written as valgrind wrote it. Valgrind gives the
    entry instruction the line of the code inlined there: cJSON's cJSON_Parse was
    `cJSON.c:1079`, inside cJSON_ParseWithLengthOpts, and the C library's _int_malloc
    malloc.c:1338, in checked_request2size; the outermost frame is the function's own."""
    names = {RECURSION.sub("", fn) for _ob, fn in self_costs}
    entries = entry_sites(program, names, before=before)
    out = {}
    for fn, sites in self_costs.items():
        entry = entries.get(RECURSION.sub("", fn[1]))
        site = None if entry is None else counted_site(entry, sites)
        if site is not None:
            out[fn] = site
    return out


def counted_site(site: Site, sites: Iterable[Site]) -> Site | None:
    """SITE with its file as valgrind wrote it, when the function has counted lines in
    that file: the same file, or one whose path ends in SITE's (valgrind writes the C
    library's printf_fp.c as ./stdio-common/./stdio-common/printf_fp.c where
    llvm-symbolizer says ./stdio-common/printf_fp.c). Its line need not be counted: the
    entry instruction's counted line may be a helper's inlined there."""
    files = {file for file, _line in sites}
    if site[0] in files:
        return site
    tail = _parts(site[0])
    for file in sorted(files):
        if tail and _parts(file)[-len(tail) :] == tail:
            return file, site[1]
    return None


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]
