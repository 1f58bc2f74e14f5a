"""Batch symbolization: (DSO, address) -> inline chain of Frames with file:line.

Every unique address is looked up once, through at most one llvm-symbolizer process
per CPU (JSON output, one `"object" 0xaddr` query per line). Function names are
demangled (C++ and Rust); Rust legacy hashes (`::h0123456789abcdef`) are dropped.
Without llvm-symbolizer, ELF symbol tables (pyelftools) give function names only.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache

from ..binaries import (
    DEBUG_DIRS,
    STT_FUNC,
    STT_GNU_IFUNC,
    ElfInfo,
    Symbol,
    binary_at,
    build_id_paths,
    elf_info,
    find_dso,
)
from ..model.profile import KERNEL_DSO, UNKNOWN, Frame
from .demangle import demangle_map
from .kallsyms import Kallsyms, kernel_symbols, load_kallsyms
from .kallsyms import kallsyms_candidates as _kallsyms_candidates

try:  # optional fast paths from the native extension (make native)
    import perfsleuth_native as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

FUNCTION_TYPES = frozenset({STT_FUNC, STT_GNU_IFUNC})
# An object llvm-symbolizer reads this much ELF and DWARF of is worth a run of its own
LARGE_DWARF_BYTES = 2 << 20
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


def find_llvm_symbolizer() -> str | None:
    """/usr/bin/llvm-symbolizer-16 when present, else llvm-symbolizer on PATH."""
    override = os.environ.get("PERFSLEUTH_LLVM_SYMBOLIZER")
    if override:
        return override if os.access(override, os.X_OK) else None
    if os.access("/usr/bin/llvm-symbolizer-16", os.X_OK):
        return "/usr/bin/llvm-symbolizer-16"
    return shutil.which("llvm-symbolizer")


@lru_cache(maxsize=4096)
def dso_name(path: str) -> str:
    """What a Frame shows as its DSO: the file name, or the [special] name."""
    if path.startswith("["):
        return path
    return os.path.basename(path) or path


_RUST_ESC = re.compile(r"\$(SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-f]{2,6})\$")
_RUST_ESC_MAP = {
    "SP": "@",
    "BP": "*",
    "RF": "&",
    "LT": "<",
    "GT": ">",
    "LP": "(",
    "RP": ")",
    "C": ",",
}


def _rust_unescape(m: re.Match) -> str:
    code = m.group(1)
    if code in _RUST_ESC_MAP:
        return _RUST_ESC_MAP[code]
    try:
        return chr(int(code[1:], 16))
    except ValueError:
        return m.group(0)


_QUALIFIERS = re.compile(r"(\s*(const|volatile|&&|&|noexcept))+$")


def strip_params(name: str) -> str:
    """A demangled C++ name without its parameter list and qualifiers:
    "ns::C<int>::f(int) const" -> "ns::C<int>::f" (as perf report prints it)."""
    body = _QUALIFIERS.sub("", name)
    if not body.endswith(")"):
        return name
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        c = body[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return body[:i] if i > 0 else name
    return name


def clean_function(name: str) -> str:
    """Drop Rust legacy hashes and undo Rust legacy escapes ($LT$, $u7b$, ..)
    that C++ demanglers leave in place."""
    name = _RUST_HASH.sub("", name)
    if "$" in name and _RUST_ESC.search(name):
        parts = [p[1:] if p.startswith("_$") else p for p in name.split("::")]
        name = _RUST_ESC.sub(_rust_unescape, "::".join(parts)).replace("..", "::")
    return name


class ElfSymbols:
    """Function symbols of one ELF (.symtab, else .dynsym): by address and by name.

    `section` forces one table (".dynsym": the exported names, where C aliases
    such as malloc / __libc_malloc live).
    """

    def __init__(self, path: str, section: str | None = None) -> None:
        items: list[tuple[int, int, str]] = []
        self.by_name: dict[str, int] = {}
        # start address -> [(name, binding)]; binding 0 local, 1 global, 2 weak
        self.aliases: dict[int, list[tuple[str, int]]] = {}
        self._demangled: dict[str, int] | None = None
        for symbol in _function_symbols(path, section):
            name = symbol.name.split("@", 1)[0]
            if name and symbol.value:
                items.append((symbol.value, symbol.size, name))
                self.by_name.setdefault(name, symbol.value)
                self.aliases.setdefault(symbol.value, []).append((name, symbol.binding))
        items.sort()
        self.entries = items
        self.addrs = [a for a, _, _ in items]

    def lookup(self, vaddr: int) -> str | None:
        i = bisect.bisect_right(self.addrs, vaddr) - 1
        if i < 0:
            return None
        start, size, name = self.entries[i]
        if size and vaddr >= start + size:
            return None
        return name

    def address_of(self, name: str) -> int | None:
        """Start address of a function, by its plain or demangled (C++/Rust) name."""
        addr = self.by_name.get(name)
        if addr is not None:
            return addr
        if self._demangled is None:
            mangled = _demangle_all([n for n in self.by_name if n.startswith(("_Z", "_R"))])
            self._demangled = {}
            for m, d in mangled.items():
                if d != m:
                    self._demangled.setdefault(d, self.by_name[m])
                    # perf prints C++ names without their parameter lists
                    self._demangled.setdefault(strip_params(d), self.by_name[m])
        return self._demangled.get(name)


def _function_symbols(path: str, section: str | None) -> list[Symbol]:
    binary = binary_at(path)
    if binary is None:
        return []
    table = section or (".symtab" if binary.section(".symtab") else ".dynsym")
    return binary.symbols(table, FUNCTION_TYPES)


def _symbols(line: str) -> list[dict] | None:
    """The symbols of one line of llvm-symbolizer's JSON output."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return (doc.get("Symbol") if isinstance(doc, dict) else None) or None


def _demangle_all(names: list[str]) -> dict[str, str]:
    return {m: clean_function(d) for m, d in demangle_map(names).items()}


class Aliases:
    """The starts .dynsym gives several names, as much as best_alias needs.

    The agent keeps one per DSO for its lifetime: a big C++ library's whole
    .dynsym as ElfSymbols is ~16 MB of Python objects (LLVM 15: 36,687 names),
    of which 1,558 starts have several names (~1 MB).
    """

    def __init__(self, table: ElfSymbols) -> None:
        self.aliases = {start: names for start, names in table.aliases.items() if len(names) > 1}

    @classmethod
    def of_dynsym(cls, path: str) -> Aliases:
        """Aliases(ElfSymbols(path, ".dynsym")), decoding only the names at starts that
        several entries share: parsing every name of every new DSO's .dynsym was most of
        the agent's own CPU in its first windows (66 DSOs: ~1 s on a busy host)."""
        binary = binary_at(path)
        table = binary.section(".dynsym") if binary else None
        if binary is None or table is None or table.link >= len(binary.sections):
            return cls(ElfSymbols(path, ".dynsym"))
        if not (
            binary.headers.elf64 and binary.headers.little_endian and sys.byteorder == "little"
        ):
            return cls(ElfSymbols(path, ".dynsym"))
        raw = binary.data(table)
        # Elf64_Sym as three words: name | info << 32 | ..., st_value, st_size
        words = array("Q", raw[: len(raw) - len(raw) % 24])
        values = words[1::3]
        shared = {v for v, n in Counter(values).items() if n > 1 and v}
        strings = binary.data(binary.sections[table.link]) if shared else b""
        found: dict[int, list[tuple[str, int]]] = {}
        for head, value in zip(words[0::3], values, strict=True):
            info = (head >> 32) & 0xFF
            if value not in shared or info & 0xF not in FUNCTION_TYPES:
                continue
            at = head & 0xFFFFFFFF
            end = strings.find(b"\0", at)
            name = strings[at : end if end >= 0 else len(strings)].decode("utf-8", "replace")
            if name := name.split("@", 1)[0]:
                found.setdefault(value, []).append((name, info >> 4))
        aliases = cls.__new__(cls)
        aliases.aliases = {start: names for start, names in found.items() if len(names) > 1}
        return aliases

    def best_alias(self, start: int, name: str) -> str:
        """The most canonical of the names at `start` when `name` is one of them.

        C libraries export one function under several names (malloc,
        __libc_malloc); prefer fewer leading underscores, then global over
        weak over local, then the shorter name — "malloc", "free".
        """
        cands = self.aliases.get(start)
        if not cands:
            # glibc's __GI_ names are hidden aliases of the exported one (hidden_def)
            return name.removeprefix("__GI_")
        names = {n for n, _ in cands}
        if name not in names and name.removeprefix("__GI_") not in names:
            return name
        rank = {1: 0, 2: 1, 0: 2}
        return min(
            cands,
            key=lambda c: (len(c[0]) - len(c[0].lstrip("_")), rank.get(c[1], 3), len(c[0]), c[0]),
        )[0]


@lru_cache(maxsize=256)
def dynsym(path: str) -> Aliases:
    return Aliases.of_dynsym(path)


@lru_cache(maxsize=256)
def elf_symbols(path: str) -> ElfSymbols:
    return ElfSymbols(path)


# glibc's malloc asks for transparent huge pages: llvm-symbolizer's decompressed DWARF (libc's
# ~20 MB) then takes some 5,000 page faults instead of 17,000, 0.025 of its 0.16 CPU-s
HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"


def llvm_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """ENVIRON for an llvm-symbolizer run: HUGE_PAGES_TUNABLE added to GLIBC_TUNABLES
    (a tunable the user set wins, coming after it)."""
    tunables = environ.get("GLIBC_TUNABLES")
    joined = f"{HUGE_PAGES_TUNABLE}:{tunables}" if tunables else HUGE_PAGES_TUNABLE
    return {**environ, "GLIBC_TUNABLES": joined}


def _elf_and_dwarf_bytes(path: str) -> int:
    """The size of an object file and of its debug file under /usr/lib/debug/.build-id:
    what llvm-symbolizer decompresses and parses of it grows with it."""
    info = elf_info(path)
    debug = build_id_paths(info.build_id)[: len(DEBUG_DIRS)] if info else []
    return sum(os.path.getsize(p) for p in (path, *debug) if os.path.isfile(p))


class Symbolizer:
    """Symbolizes many addresses at once; see the module docs.

    `symbolize_offsets` takes (recorded DSO path, build-id, file offset) triples,
    as perf.data gives them; `symbolize_vaddrs` takes (path, ELF virtual
    address) pairs. Both return {key: (Frame, ...)} with the inline chain leaf
    first: every frame but the last has inlined=True.
    """

    def __init__(self, llvm_symbolizer: str | None = None, kallsyms: Kallsyms | None = None):
        self.tool = llvm_symbolizer or find_llvm_symbolizer()
        self._kallsyms = kallsyms
        # recorded path -> file actually used (None: not found), for run metadata
        self.resolved: dict[str, str | None] = {}

    @property
    def kallsyms(self) -> Kallsyms:
        if self._kallsyms is None:
            self._kallsyms = load_kallsyms()
        return self._kallsyms

    # -- user space -------------------------------------------------------

    def symbolize_offsets(
        self, items: Iterable[tuple[str, str, int]]
    ) -> dict[tuple[str, int], tuple[Frame, ...]]:
        """{(path, offset): frames} for (path, build_id, file offset) triples."""
        out: dict[tuple[str, int], tuple[Frame, ...]] = {}
        queries: list[tuple[str, int, str, tuple[str, int]]] = []
        infos: dict[str, ElfInfo | None] = {}  # per file: elf_info checks it on disk each call
        for path, build_id, offset in items:
            real = self._resolve(path, build_id)
            if real is not None and real not in infos:
                infos[real] = elf_info(real)
            info = infos[real] if real else None
            vaddr = info.offset_to_vaddr(offset) if info else None
            if real is None or vaddr is None:
                out[(path, offset)] = (Frame(UNKNOWN, dso=dso_name(path)),)
                continue
            queries.append((real, vaddr, path, (path, offset)))
        out.update(self._run(queries))
        return out

    def symbolize_vaddrs(
        self, items: Iterable[tuple[str, int]], build_ids: dict[str, str] | None = None
    ) -> dict[tuple[str, int], tuple[Frame, ...]]:
        """{(path, vaddr): frames} for (path, ELF virtual address) pairs."""
        out: dict[tuple[str, int], tuple[Frame, ...]] = {}
        queries: list[tuple[str, int, str, tuple[str, int]]] = []
        for path, vaddr in items:
            real = self._resolve(path, (build_ids or {}).get(path, ""))
            if real is None:
                out[(path, vaddr)] = (Frame(UNKNOWN, dso=dso_name(path)),)
                continue
            queries.append((real, vaddr, path, (path, vaddr)))
        out.update(self._run(queries))
        return out

    def _resolve(self, path: str, build_id: str) -> str | None:
        if path not in self.resolved:
            self.resolved[path] = find_dso(path, build_id)
        return self.resolved[path]

    def _run(
        self, queries: list[tuple[str, int, str, tuple[str, int]]]
    ) -> dict[tuple[str, int], tuple[Frame, ...]]:
        if not queries:
            return {}
        unique = sorted({(real, vaddr) for real, vaddr, _, _ in queries})
        answers: dict[tuple[str, int], list[dict]] = {}
        if self.tool:
            answers = self._llvm(unique)
            # names llvm's demangler gave up on: one c++filt run for all of them
            mangled = {
                s["FunctionName"]
                for chain in answers.values()
                for s in chain
                if str(s.get("FunctionName", "")).startswith(("_Z", "_R"))
            }
            if mangled:
                names = _demangle_all(sorted(mangled))
                for chain in answers.values():
                    for s in chain:
                        fn = s.get("FunctionName")
                        if fn in names:
                            s["FunctionName"] = names[fn]
        out: dict[tuple[str, int], tuple[Frame, ...]] = {}
        for real, vaddr, path, key in queries:
            syms = answers.get((real, vaddr))
            out[key] = self._frames(syms, real, vaddr, dso_name(path))
        return out

    def _llvm(self, unique: list[tuple[str, int]]) -> dict[tuple[str, int], list[dict]]:
        """llvm-symbolizer runs in parallel, one per object whose DWARF is large (at most
        one per CPU), the object files shared out among them by their number of addresses
        (the most first, each to the run with the fewest). Each run starts by loading
        libLLVM (~0.02 CPU-s): one run per object cost a perf.data of 4 objects 0.21 CPU-s
        where 2 runs cost 0.16, and one run for libc (6 MB of ELF and DWARF) and three
        small objects costs 0.015 less than two runs, for ~0.01 s more wall time."""
        by_obj: dict[str, list[int]] = {}
        for real, vaddr in unique:
            by_obj.setdefault(real, []).append(vaddr)
        large = sum(1 for obj in by_obj if _elf_and_dwarf_bytes(obj) >= LARGE_DWARF_BYTES)
        runs: list[list[str]] = [[] for _ in range(max(1, min(large, os.cpu_count() or 1, 8)))]
        for real in sorted(by_obj, key=lambda obj: len(by_obj[obj]), reverse=True):
            if '"' in real:  # a name the query syntax cannot quote: a run of its own
                runs.append([real])
                continue
            min(runs, key=lambda run: sum(len(by_obj[obj]) for obj in run)).append(real)
        keys = [[(obj, v) for obj in run for v in by_obj[obj]] for run in runs if run]
        if len(keys) == 1:
            return self._llvm_objects(keys[0])
        from concurrent.futures import ThreadPoolExecutor  # only for parallel runs

        out: dict[tuple[str, int], list[dict]] = {}
        with ThreadPoolExecutor(max_workers=len(keys)) as pool:
            for answers in pool.map(self._llvm_objects, keys):
                out.update(answers)
        return out

    def _llvm_objects(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], list[dict]]:
        """One llvm-symbolizer run for (object, vaddr) KEYS: `--obj` for one object,
        else one `"object" 0xaddr` query per line."""
        if len({obj for obj, _ in keys}) == 1:
            args, queries = [f"--obj={keys[0][0]}"], [f"0x{v:x}\n" for _, v in keys]
        else:
            args, queries = [], [f'"{obj}" 0x{v:x}\n' for obj, v in keys]
        answers = self._llvm_run(args, queries)
        return {key: syms for key, syms in zip(keys, answers, strict=True) if syms}

    def _llvm_run(self, args: list[str], queries: list[str]) -> list[list[dict] | None]:
        """One llvm-symbolizer run: the symbols answering each query line (None: none)."""
        assert self.tool
        cmd = [
            self.tool,
            "--output-style=JSON",
            "--demangle",
            "--inlines",
            "--functions=linkage",
            "--debug-file-directory=/usr/lib/debug",
            *args,
        ]
        unanswered: list[list[dict] | None] = [None] * len(queries)
        # through files, not pipes: a pipe's answers arrive a line at a time, and reading
        # them took hundreds of wake-ups of this process
        with tempfile.TemporaryFile() as asked, tempfile.TemporaryFile() as answered:
            asked.write("".join(queries).encode("utf-8", "surrogateescape"))
            asked.seek(0)
            try:
                subprocess.run(
                    cmd,
                    stdin=asked,
                    stdout=answered,
                    stderr=subprocess.DEVNULL,
                    env=llvm_environment(os.environ),
                    check=False,
                )
            except OSError:
                return unanswered
            answered.seek(0)
            results = answered.read().decode("utf-8", "replace").splitlines()
        if len(results) != len(queries):
            return unanswered
        return [_symbols(line) for line in results]

    def _frames(
        self, syms: list[dict] | None, real: str, vaddr: int, dso: str
    ) -> tuple[Frame, ...]:
        frames: list[Frame] = []
        if syms:
            n = len(syms)
            for i, s in enumerate(syms):
                fn = s.get("FunctionName") or "??"
                file = s.get("FileName") or ""
                frames.append(
                    Frame(
                        clean_function(fn) if fn != "??" else UNKNOWN,
                        dso=dso,
                        file="" if file == "??" else file,
                        line=int(s.get("Line") or 0),
                        inlined=i < n - 1,
                    )
                )
        if frames and frames[-1].function != UNKNOWN and syms:
            start = syms[-1].get("StartAddress") or ""
            if start.startswith("0x"):
                best = dynsym(real).best_alias(int(start, 16), frames[-1].function)
                if best != frames[-1].function:
                    last = frames[-1]
                    frames[-1] = Frame(best, dso=last.dso, file=last.file, line=last.line)
        if not frames and not self.tool:
            # no llvm-symbolizer: function names from the ELF symbol tables.
            name = elf_symbols(real).lookup(vaddr)
            if name:
                last = frames[-1] if frames else Frame(UNKNOWN, dso=dso)
                frames[-1:] = [Frame(clean_function(name), dso=dso, file=last.file, line=last.line)]
        return tuple(frames) or (Frame(UNKNOWN, dso=dso),)

    # -- kernel -------------------------------------------------------------

    def kernel_frames(
        self,
        addrs: Iterable[int],
        *,
        build_id: str = "",
        release: str = "",
        text_addr: int | None = None,
    ) -> dict[int, Frame]:
        """{addr: Frame} for kernel addresses of a recording.

        The kallsyms used is perf's copy from the recording
        (~/.debug/[kernel.kallsyms]/<build_id>/kallsyms), else /proc/kallsyms
        when the recording was made on the running kernel (same release and
        _text address); else the frames stay [unknown]. An explicit
        `kallsyms` given to the constructor wins.
        """
        wanted = sorted(set(addrs))
        if not wanted:
            return {}
        if self._kallsyms is None and _native is not None:
            for path in _kallsyms_candidates(build_id, release):
                try:
                    # {text_addr, name: [str | None], module: [str | None]}
                    found = _native.kallsyms_lookup(path, wanted)
                except OSError:
                    continue
                stext, names, modules = found["text_addr"], found["name"], found["module"]
                if path == "/proc/kallsyms" and text_addr and stext and stext != text_addr:
                    break  # another boot (KASLR slide): /proc/kallsyms would lie
                if all(n is None for n in names):
                    continue  # addresses hidden (kptr_restrict)
                out = {}
                for a, name, module in zip(wanted, names, modules, strict=True):
                    if name is None:
                        out[a] = Frame(UNKNOWN, dso=KERNEL_DSO, kernel=True)
                    else:
                        dso = f"[{module}]" if module else KERNEL_DSO
                        out[a] = Frame(name, dso=dso, kernel=True)
                return out
            return {a: Frame(UNKNOWN, dso=KERNEL_DSO, kernel=True) for a in wanted}
        if self._kallsyms is None:
            self._kallsyms = kernel_symbols(build_id, release, text_addr)
        return {a: self.kernel_frame(a) for a in wanted}

    def kernel_frame(self, addr: int, dso: str = KERNEL_DSO) -> Frame:
        """A kernel frame named from /proc/kallsyms ([unknown] when unreadable)."""
        hit = self.kallsyms.lookup(addr) if self.kallsyms.usable else None
        if hit is None:
            return Frame(UNKNOWN, dso=dso, kernel=True)
        name, module = hit
        return Frame(name, dso=f"[{module}]" if module else KERNEL_DSO, kernel=True)
