"""The function `record --mode cache` traces: finding it in the binary (or saying
why it cannot be traced), and a memory trace of its calls as a cpu_cache_projections Trace with
source lines."""

from __future__ import annotations

import difflib
import os
import re
from functools import lru_cache

from ..binaries import DWARF_ERRORS, binary_at, elf_info
from ..binaries.subprograms import attr_text, origin
from ..cpu_cache_projections.spatial_sample import LINE_SIZE
from ..cpu_cache_projections.trace import PAGE_SIZE, Trace
from ..errors import UserError
from ..model.profile import UNKNOWN, Frame
from ..symbols.function_starts import unnamed_frame
from ..symbols.symbolizer import Symbolizer, clean_function, dso_name, elf_symbols
from . import memtrace
from .valgrind import demangle_all

# a Rust legacy-mangled symbol's hash, `17h<16 hex>E` (`rmap::lookup_session::h0123...`)
RUST_HASH = re.compile(r"17h[0-9a-f]{16}E$")


def find_target(executable: str, function: str) -> memtrace.Target:
    """The function's entry, or a UserError saying why it cannot be traced."""
    symbols = elf_symbols(executable)
    start = symbols.address_of(function)
    if start is None:
        start = _by_plain_name(symbols.by_name, function)
    if start is None:
        raise UserError(missing_function_message(executable, function))
    return memtrace.Target(executable, function, start, memtrace.load_base(executable))


def _by_plain_name(names: dict[str, int], function: str) -> int | None:
    """`ns::f` for the C++ function `ns::f(int)` when only one overload exists; a Rust
    function by its path without the hash (`crate::f`), or by its last part(s) (`f`)
    when no other function's path ends so."""
    mangled = [n for n in names if n.startswith(("_Z", "_R"))]
    plain = [clean_function(d.split("(")[0]) for d in demangle_all(mangled)]
    exact = {names[m] for m, p in zip(mangled, plain, strict=True) if p == function}
    ending = {names[m] for m, p in zip(mangled, plain, strict=True) if p.endswith(f"::{function}")}
    rust = {names[m] for m in mangled if m.startswith("_R") or RUST_HASH.search(m)} & ending
    for found in (exact, rust):
        if len(found) == 1:
            return found.pop()
    return None


def stripped_message(executable: str) -> str | None:
    """Why none of the executable's own functions can be found, when it is stripped."""
    binary = binary_at(executable)
    if binary is None or binary.info.has_symbols:
        return None
    return (
        f"{executable} is stripped (it has no symbol table), so its own functions cannot be "
        "found by name; trace a build that was not stripped (no `strip`, no -s)"
    )


def missing_function_message(executable: str, function: str) -> str:
    if stripped := stripped_message(executable):
        return f"--function {function}: {stripped}"
    if function in inlined_functions(executable) or last_part(function) in inlined_functions(
        executable
    ):
        return (
            f"--function {function}: the compiler inlined it into its callers in {executable}, "
            "so it has no calls to trace; trace a caller, or build it with "
            "__attribute__((noinline))"
        )
    return (
        f"--function {function}: no such function in {executable}"
        f"{close_matches_text(executable, function)}"
    )


def last_part(function: str) -> str:
    """`find` of `std::_Hashtable<unsigned long, ...>::find(unsigned long const&)`: the
    name DWARF gives a C++ member function (its class, templates and all, aside)."""
    plain = function.split("(")[0]
    return plain[plain.rfind(">") + 1 :].rsplit("::", 1)[-1]


def close_matches_text(executable: str, function: str) -> str:
    names = plain_names(executable)
    close = difflib.get_close_matches(function, names, n=5, cutoff=0.5)
    close += [n for n in names if function.lower() in n.lower() and n not in close][
        : 5 - len(close)
    ]
    return f"; close matches: {', '.join(close)}" if close else "; check `nm -C` for its name"


@lru_cache(maxsize=8)
def plain_names(executable: str) -> list[str]:
    names = sorted(elf_symbols(executable).by_name)
    return sorted({d.split("(")[0] for d in demangle_all(names)})


@lru_cache(maxsize=8)
def inlined_functions(executable: str) -> frozenset[str]:
    """Names of subprograms the debug info describes as inlined (DW_AT_inline)."""
    binary = binary_at(executable)
    dwarf = binary.dwarf() if binary else None
    if dwarf is None:
        return frozenset()
    found: set[str] = set()
    try:
        for cu in dwarf.iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag == "DW_TAG_subprogram" and "DW_AT_inline" in die.attributes:
                    # a C++ member function's name is on its declaration in the class
                    name = attr_text(die, "DW_AT_name") or attr_text(origin(die), "DW_AT_name")
                    if name:
                        found.add(name)
    except DWARF_ERRORS:
        return frozenset()
    return frozenset(found)


def never_called_message(executable: str, function: str) -> str:
    return (
        f"--function {function}: {executable} has this function but the run never called it; "
        "pick a function the workload reaches (`perfsleuth run -- CMD` shows the hot ones)"
    )


def from_recording(target: memtrace.Target, rec: memtrace.TracedCalls, line_size: int) -> Trace:
    trace = Trace(
        function=target.function,
        executable=target.executable,
        base=target.base,
        line_size=line_size,
        calls=rec.calls,
        total_calls=rec.total_calls,
        instructions=rec.instructions,
        loads=rec.loads,
        stores=rec.stores,
        data_lines=len(rec.data_lines),
        code_lines=len(rec.code_lines),
        data_pages=len({line // (PAGE_SIZE // line_size) for line in rec.data_lines}),
        sample_every=rec.sample_every,
        out_of_time=rec.out_of_time,
        chosen=rec.chosen,
        spatial=rec.spatial if line_size == LINE_SIZE else [],
    )
    trace.sources = source_lines(trace, rec.objects)
    return trace


def source_lines(trace: Trace, objects: list[tuple[int, int, int, str]]) -> dict[int, str]:
    """pc -> "file:line" for the executable's instructions, in one symbolizer run;
    library code (found in `objects`, the tracer's code mappings) is named by its
    library and function, with its file:line where the library has debug info."""
    pcs = sorted({a[3] for call in trace.calls for a in call})
    executable = os.path.realpath(trace.executable)
    in_libraries: dict[int, tuple[str, int]] = {}
    for pc in pcs:
        where = _mapping_of(objects, pc)
        if where is not None and os.path.realpath(where[3]) != executable:
            in_libraries[pc] = (where[3], pc - where[0] + where[2])
    queries = [(trace.executable, pc - trace.base) for pc in pcs if pc not in in_libraries]
    symbolizer = Symbolizer()
    out = {}
    for (path, vaddr), chain in symbolizer.symbolize_vaddrs(queries).items():
        out[vaddr + trace.base] = _named(path, vaddr, chain[0], own=True)
    named = symbolizer.symbolize_offsets((path, "", off) for path, off in in_libraries.values())
    for pc, (path, offset) in in_libraries.items():
        out[pc] = _named(path, offset, named[(path, offset)][0], own=False)
    return out


def _named(path: str, address: int, leaf: Frame, own: bool) -> str:
    """The program's own code by file:line; library code by its object, function and
    file:line where it has debug info (code without lines is one row per function);
    the executable's PLT stubs as such (a symbolizer names them after _init)."""
    if own and leaf.file and leaf.line:
        return f"{leaf.file}:{leaf.line}"
    if own and _in_plt(path, address):
        return f"{dso_name(path)} [PLT stub]"
    if not own and leaf.function == UNKNOWN:
        return _unnamed(path, address)
    place = f" {leaf.file}:{leaf.line}" if leaf.file and leaf.line else ""
    return f"{dso_name(path)} {leaf.function}{place}"


def _unnamed(path: str, offset: int) -> str:
    """Library code without a symbol (a static function of a stripped library) by its
    function's start, from .eh_frame_hdr, as the profiles name it: `[unknown]
    libbearssl.so.0.6+0x2e1a0`, one row per function, where the rows of every such
    function merged into `libbearssl.so.0.6 [unknown]`."""
    info = elf_info(path)
    vaddr = info.offset_to_vaddr(offset) if info else None
    frame = unnamed_frame(path, dso_name(path), vaddr, "")
    return frame.function if frame.function != UNKNOWN else f"{dso_name(path)} {UNKNOWN}"


def _in_plt(path: str, vaddr: int) -> bool:
    binary = binary_at(path)
    sections = binary.sections if binary is not None else ()
    return any(s.name.startswith(".plt") and s.addr <= vaddr < s.addr + s.size for s in sections)


def _mapping_of(
    objects: list[tuple[int, int, int, str]], pc: int
) -> tuple[int, int, int, str] | None:
    return next((m for m in objects if m[0] <= pc < m[1]), None)
