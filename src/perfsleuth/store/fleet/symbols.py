"""Symbols uploaded to the fleet store, to name the frames hosts could not name.

A host without the symbols of a binary (stripped, debug info not installed) stores its
frames as "[unknown] dso+0x..." with the build-id and the ELF address of each
(model.profile.Frame). `perfsleuth symbols upload FILE` keeps the function symbols of
an unstripped binary or its .debug file beside the store, one table per build-id:

    symbols/<build-id>.parquet      address (ELF virtual address of a function's start),
                                    size (bytes, 0 when unknown), function (demangled)

Queries name the frames when they read them (name_frames), not by rewriting the store:
stored files stay immutable (content ids, compacted files and rollups stay valid), one
upload names every window already stored and every one to come, on a folder and on S3
alike, and the cost is one listing plus one small table per build-id a query meets
unnamed, for the distinct frames of its result only.
"""

from __future__ import annotations

import bisect

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import UserError
from ...symbols import UNKNOWN
from ...symbols.demangle import demangle_all
from ...symbols.elf import elf_info
from ...symbols.symbolizer import Aliases, ElfSymbols, clean_function
from .filesystem import Files

SYMBOLS_DIR = "symbols"
SYMBOLS_SCHEMA = pa.schema(
    [("address", pa.int64()), ("size", pa.int64()), ("function", pa.string())]
)


def symbol_table(path: str) -> tuple[str, pa.Table]:
    """(build-id, function symbols) of an ELF file; UserError when it has neither."""
    info = elf_info(path)
    if info is None:
        raise UserError(f"{path}: not an ELF file (give a binary, a library or a .debug file)")
    if not info.build_id:
        raise UserError(f"{path}: no GNU build-id, so no frame can be matched to it")
    symbols = ElfSymbols(path, ".symtab")
    if not symbols.entries:
        raise UserError(
            f"{path}: no symbol table (stripped): upload the unstripped binary or its .debug file"
        )
    aliases = Aliases(symbols)
    functions: dict[int, tuple[int, str]] = {}
    for address, size, name in symbols.entries:
        if address not in functions:
            functions[address] = (size, aliases.best_alias(address, name))
    names = [clean_function(n) for n in demangle_all([n for _, n in functions.values()])]
    table = pa.table(
        {
            "address": list(functions),
            "size": [size for size, _ in functions.values()],
            "function": names,
        },
        schema=SYMBOLS_SCHEMA,
    )
    return info.build_id, table


def symbols_file(build_id: str) -> str:
    return f"{SYMBOLS_DIR}/{build_id}.parquet"


class _Functions:
    """One uploaded table, looked up by address."""

    def __init__(self, table: pa.Table) -> None:
        self.starts = table.column("address").to_pylist()
        self.sizes = table.column("size").to_pylist()
        self.names = table.column("function").to_pylist()

    def name(self, address: int) -> str | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or (self.sizes[i] and address >= self.starts[i] + self.sizes[i]):
            return None
        return self.names[i]


def name_frames(files: Files, frames: pa.Table) -> pa.Table:
    """`frames` (the frames table's rows) with build_id and address never null, and each
    "[unknown]" function whose build-id has uploaded symbols named by them."""
    build_ids = pc.fill_null(frames.column("build_id"), "").to_pylist()
    addresses = pc.fill_null(frames.column("address"), 0).to_pylist()
    functions = frames.column("function").to_pylist()
    wanted = {b for b, f in zip(build_ids, functions, strict=True) if b and f.startswith(UNKNOWN)}
    uploaded = set(files.names(SYMBOLS_DIR)) if wanted else set()
    tables = {b: _read(files, b) for b in wanted if f"{b}.parquet" in uploaded}
    named = [
        (tables[b].name(a) if b in tables and f.startswith(UNKNOWN) else None) or f
        for b, a, f in zip(build_ids, addresses, functions, strict=True)
    ]
    frames = _set(frames, "function", pa.array(named, pa.string()))
    frames = _set(frames, "build_id", pa.array(build_ids, pa.string()))
    return _set(frames, "address", pa.array(addresses, pa.int64()))


def _read(files: Files, build_id: str) -> _Functions:
    table = pq.read_table(files.path(symbols_file(build_id)), filesystem=files.fs)
    return _Functions(table.sort_by("address"))


def _set(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, column)
