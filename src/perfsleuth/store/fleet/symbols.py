"""Symbols that arrive after the fact, to name the frames hosts could not name.

A host without the symbols of a binary (stripped, debug info not installed) stores its
frames as "[unknown] dso+0x..." with the build-id and the ELF address of each
(model.profile.Frame). Two things name them later, both kept beside the store per
build-id:

    symbols/<build-id>.parquet      address (ELF virtual address of a function's start),
                                    size (bytes, 0 when unknown), function (demangled)
    debuginfo/<build-id>.debug      the file itself, when it has DWARF: file:line
    debuginfo/<build-id>.missing    no debuginfod server had it (asked again a day later)

`perfsleuth symbols upload FILE` keeps both from an unstripped binary or its .debug
file; a query given debuginfod servers (--debuginfod, $DEBUGINFOD_URLS) fetches the
debug file of each build-id it meets unnamed, once, and keeps it the same way.

Queries name the frames when they read them (LateSymbols.name), not by rewriting the
store: stored files stay immutable (content ids, compacted files and rollups stay
valid), one upload names every window already stored and every one to come, on a folder
and on S3 alike. A query pays one listing, one small table per build-id it meets
unnamed, and one llvm-symbolizer run over the distinct addresses of its result for the
file:line of each. The function is the one the address is in (the symbol table's, as
perf reports it); file:line is the innermost source line, inlined code included.
"""

from __future__ import annotations

import bisect
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import repeat

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...binaries import elf_info
from ...errors import UserError
from ...formats.limits import MAX_INPUT_ENV, max_input_bytes
from ...symbols import UNKNOWN
from ...symbols.debuginfod import Fetched, fetch_debuginfo, valid_build_id
from ...symbols.demangle import demangle_all
from ...symbols.symbolizer import Aliases, ElfSymbols, Symbolizer, clean_function
from .filesystem import Files
from .writer import parquet_bytes

SYMBOLS_DIR = "symbols"
DEBUGINFO_DIR = "debuginfo"
MISSING_TTL_S = 86400.0  # a build-id no server had is asked for again a day later
FETCHES = 8  # debug files fetched at once
DOWN_S = 300.0  # a server that did not answer is asked again this much later (serve)
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
    if not valid_build_id(info.build_id):
        raise UserError(
            f"{path}: its build-id is {len(info.build_id) // 2:,} bytes long; a GNU build-id "
            "is 4 to 64 bytes (20 from ld's default sha1), so no frame can carry it"
        )
    symbols = ElfSymbols(path, ".symtab")
    if not symbols.entries and not info.has_debug_info:  # DWARF alone still names functions
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


class LateSymbols:
    """Names the unknown frames of the store at `files` from uploaded symbols, kept debug
    files and the debuginfod `servers`; `notes` are what went wrong, one line each, in
    the order it happened, for the caller to tell the user (frames stay unknown then)."""

    def __init__(self, files: Files, servers: list[str]) -> None:
        self.files = files
        self.servers = servers
        self.notes: list[str] = []
        self._asked: set[str] = set()  # build-ids the servers answered for, this process
        self._down: dict[str, float] = {}  # server -> when it last did not answer

    def upload(self, path: str) -> tuple[str, int, bool]:
        """Keep the symbols of the ELF file at `path`, and the file itself when it has
        DWARF; (build-id, functions, whether file:line is kept)."""
        build_id, table = symbol_table(path)
        info = elf_info(path)
        lines = bool(info and info.has_debug_info)
        if lines:
            _check_size(path)
        self.files.put(symbols_file(build_id), parquet_bytes(table))
        if lines:
            self.files.put_file(debuginfo_file(build_id), path)
        return build_id, table.num_rows, lines

    def name(self, frames: pa.Table) -> pa.Table:
        """`frames` (the frames table's rows) with build_id and address never null, and
        each "[unknown]" function whose build-id has symbols named, with file:line
        where a debug file is kept."""
        build_ids = pc.fill_null(frames.column("build_id"), "").to_pylist()
        addresses = pc.fill_null(frames.column("address"), 0).to_pylist()
        functions = frames.column("function").to_pylist()
        paths = frames.column("file").to_pylist()
        lines = frames.column("line").to_pylist()
        unknown = [
            i
            for i, (b, f) in enumerate(zip(build_ids, functions, strict=True))
            if b and f.startswith(UNKNOWN)
        ]
        wanted = {build_ids[i] for i in unknown}
        kept = self._listing() if wanted else {}
        if wanted and self.servers and self._fetch(wanted, kept):
            kept = self._listing()
        tables = {b: _read(self.files, b) for b in wanted if f"{b}.parquet" in kept}
        in_debug_files: dict[str, list[int]] = {}
        for i in unknown:
            if f"{build_ids[i]}.debug" in kept:
                in_debug_files.setdefault(build_ids[i], []).append(addresses[i])
        places = self._places(in_debug_files)
        for i in unknown:
            key = (build_ids[i], addresses[i])
            table = tables.get(key[0])
            place = places.get(key)
            functions[i] = (
                (table.name(key[1]) if table else None) or (place and place[0]) or functions[i]
            )
            if place:
                paths[i], lines[i] = place[1], place[2]
        frames = _set(frames, "function", pa.array(functions, pa.string()))
        frames = _set(frames, "file", pa.array(paths, pa.string()))
        frames = _set(frames, "line", pa.array(lines, pa.int32()))
        frames = _set(frames, "build_id", pa.array(build_ids, pa.string()))
        return _set(frames, "address", pa.array(addresses, pa.int64()))

    def _listing(self) -> dict[str, float]:
        """What is kept per build-id (symbol tables, debug files, missing marks): file
        name -> when it was written."""
        listed = (self.files.listing(folder) for folder in (SYMBOLS_DIR, DEBUGINFO_DIR))
        return {i.base_name: i.mtime.timestamp() if i.mtime else 0.0 for f in listed for i in f}

    def _places(
        self, addresses: dict[str, list[int]]
    ) -> dict[tuple[str, int], tuple[str, str, int]]:
        """{(build-id, address): (function, file, line)} from the kept debug files."""
        if not addresses:
            return {}
        queries, build_ids = [], {}
        for build_id, wanted in addresses.items():
            local = self._local(build_id)
            build_ids[local] = build_id
            queries += [(local, a) for a in wanted]
        places = {}
        for (local, address), chain in Symbolizer().symbolize_vaddrs(queries, build_ids).items():
            leaf, outer = chain[0], chain[-1]
            if outer.function != UNKNOWN and leaf.file:
                places[(build_ids[local], address)] = (outer.function, leaf.file, leaf.line)
        return places

    def _local(self, build_id: str) -> str:
        """A local path of the kept debug file (downloaded once from S3)."""
        rel = debuginfo_file(build_id)
        if self.files.local:
            return self.files.path(rel)
        local = os.path.join(_cache_folder(), f"{build_id}.debug")
        if not os.path.exists(local):
            with tempfile.NamedTemporaryFile(dir=os.path.dirname(local), delete=False) as out:
                out.write(self.files.get(rel))
            os.replace(out.name, local)
        return local

    def _fetch(self, wanted: set[str], kept: dict[str, float]) -> bool:
        """Ask the servers for the debug file of each build-id of `wanted` the store does
        not have (`kept`: its listing), and keep what they give: the first alone, to
        learn which servers answer, then the rest in parallel; whether any was kept."""
        recent = time.time() - MISSING_TTL_S
        todo = sorted(
            b
            for b in wanted - self._asked
            if valid_build_id(b)
            and f"{b}.debug" not in kept
            and f"{b}.parquet" not in kept
            and kept.get(f"{b}.missing", 0) < recent
        )
        stored = False
        with tempfile.TemporaryDirectory(prefix="perfsleuth-debuginfod-") as folder:
            for batch in (todo[:1], todo[1:]):
                back = time.time() - DOWN_S
                servers = [s for s in self.servers if self._down.get(s, 0.0) < back]
                if not batch or not servers:
                    break
                with ThreadPoolExecutor(max_workers=FETCHES) as pool:
                    got = list(pool.map(fetch_debuginfo, repeat(servers), batch, repeat(folder)))
                for build_id, fetched in zip(batch, got, strict=True):
                    stored |= self._keep(build_id, fetched, every_server=servers == self.servers)
        return stored

    def _keep(self, build_id: str, fetched: Fetched, every_server: bool) -> bool:
        """Keep what the servers gave for build_id, and say whether it was kept; a
        build-id every server answered for is not asked again by this process (nor,
        when none had it, for a day)."""
        for server, reason in fetched.failures:
            self._down[server] = time.time()
            self._note(f"debuginfod server {server} did not answer ({reason}); skipped")
        answered = every_server and not fetched.failures
        try:
            if fetched.path is None:
                if answered:
                    self._asked.add(build_id)
                    self.files.put(f"{DEBUGINFO_DIR}/{build_id}.missing", b"")
                return False
            self._asked.add(build_id)
            info = elf_info(fetched.path)
            if info is None or info.build_id != build_id:
                self._note(f"debuginfod served a file that is not build-id {build_id}'s; ignored")
                return False
            self.upload(fetched.path)
            return True
        except (OSError, UserError) as e:  # a store we may only read, a file of no use
            self._note(f"cannot keep the debug info of {build_id} in the store ({e})")
            return False

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _check_size(path: str) -> None:
    """Refuse to keep a debug file past the input size limit (it is copied whole)."""
    limit = max_input_bytes()
    size = os.stat(path).st_size
    if size > limit:
        raise UserError(
            f"{path}: {size / (1 << 20):,.0f} MB, larger than the {limit / (1 << 20):,.0f} MB a "
            f"kept debug file may be; upload its .debug file (objcopy --only-keep-debug) or "
            f"raise {MAX_INPUT_ENV} if it is genuine"
        )


def debuginfo_file(build_id: str) -> str:
    return f"{DEBUGINFO_DIR}/{build_id}.debug"


def _cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    folder = os.path.join(base, "perfsleuth", "debuginfo")
    os.makedirs(folder, exist_ok=True)
    return folder


def _read(files: Files, build_id: str) -> _Functions:
    table = pq.read_table(files.path(symbols_file(build_id)), filesystem=files.fs)
    return _Functions(table.sort_by("address"))


def _set(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, column)
