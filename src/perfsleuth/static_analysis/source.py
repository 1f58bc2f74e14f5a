"""Translation units for the deep analyzers: find the source, parse it with libclang.

libclang comes from Debian's libclang-16 (the same clang as the clang-16 compiler that
produces the optimisation remarks, and with its builtin headers in place); the Python
side is PyPI's `clang` bindings of the same major version.
"""

from __future__ import annotations

import functools
import glob
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..binaries.packaged import is_packaged
from ..errors import UserError
from .clang_flags import clang_accepted

LIBCLANG_CANDIDATES = (
    "/usr/lib/llvm-16/lib/libclang.so.1",
    "/usr/lib/x86_64-linux-gnu/libclang-16.so.1",
    "/usr/lib/llvm-*/lib/libclang.so.1",
)
PRELUDE_C = ("stddef.h", "stdint.h", "stdbool.h", "string.h", "stdlib.h")
PRELUDE_CXX = ("cstddef", "cstdint", "cstring", "array", "string", "string_view", "vector")
# Hot files below this share of the run are not worth a note when their source is missing.
NOTE_MIN_SHARE = 0.01
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C")
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inl", ".h++")


@dataclass
class TranslationUnit:
    """One source file with the flags it is built with, parsed or not."""

    path: Path
    flags: list[str]
    flags_origin: str  # "compile_commands.json", "DW_AT_producer" or "defaults"
    directory: Path | None = None  # the build directory the flags are relative to
    error: str = ""  # the compiler's first error when it does not parse
    functions: list[str] = field(default_factory=list)  # hot functions it holds
    producer: str = ""  # DW_AT_producer of its compile unit in the binary, when known
    compiler: str = ""  # the compile database entry's compiler command, when known
    inputs: list[str] = field(default_factory=list)  # what its last parse read: source, headers

    @property
    def is_cxx(self) -> bool:
        for n, flag in enumerate(self.flags):
            if flag == "-x" and n + 1 < len(self.flags):
                return self.flags[n + 1].startswith("c++")
            if flag.startswith("-x") and len(flag) > 2:
                return flag[2:].startswith("c++")
        return self.path.suffix != ".c"

    def with_standard_includes(self) -> TranslationUnit:
        """The unit with the common standard headers included first, for snippets
        that use them without including them."""
        headers = PRELUDE_CXX if self.is_cxx else PRELUDE_C
        forced = [arg for header in headers for arg in ("-include", header)]
        return TranslationUnit(
            self.path,
            [*self.flags, *forced],
            f"{self.flags_origin} + standard includes",
            self.directory,
            "",
            self.functions,
            self.producer,
            self.compiler,
        )


@functools.cache
def cindex():  # type: ignore[no-untyped-def]
    """The clang.cindex module bound to libclang-16, or a UserError saying what to install."""
    try:
        import clang.cindex as ci
    except ImportError as exc:
        raise UserError("the clang Python bindings are missing; run `make setup`") from exc
    for pattern in LIBCLANG_CANDIDATES:
        for lib in sorted(glob.glob(pattern), reverse=True):
            ci.Config.set_library_file(lib)
            return ci
    raise UserError("libclang not found; install it with `apt-get install libclang1-16`")


def parse(tu: TranslationUnit):  # type: ignore[no-untyped-def]
    """The libclang TranslationUnit, or None with tu.error set to the first error."""
    ci = cindex()
    # GCC-only warnings of the build (glib's -Wduplicated-branches) are not worth a word
    flags = clang_accepted([f for f in tu.flags if f != "-c"], tu.is_cxx)
    args = [*flags, "-Wno-unknown-warning-option"]
    # "incomplete": no implicit template instantiation at the end of the unit, which the
    # cursors never show (K2's inst_var.cc: 13% less CPU, the same matches and outline)
    incomplete = ci.TranslationUnit.PARSE_INCOMPLETE
    try:
        parsed = ci.Index.create().parse(str(tu.path), args=args, options=incomplete)
    except ci.TranslationUnitLoadError as exc:
        tu.error = f"{tu.path}: libclang could not load it ({exc})"
        return None
    tu.inputs = included_files(parsed, tu.path)
    for diag in parsed.diagnostics:
        if diag.severity >= ci.Diagnostic.Error:
            loc = diag.location
            where = f"{loc.file}:{loc.line}:{loc.column}" if loc.file else str(tu.path)
            tu.error = f"{where}: error: {diag.spelling}"
            return None
    return parsed


def included_files(parsed: Any, main_file: Path) -> list[str]:
    """The unit's source and every file it includes: what its analysis depends on."""
    names = {str(main_file)}
    names.update(str(inclusion.include.name) for inclusion in parsed.get_includes())
    return sorted(names)


def find_source(name: str, roots: Iterable[Path], comp_dir: str = "") -> Path | None:
    """The file `name` (as the debug info spells it), looked up as given, under
    the compilation directory, then by relative path and basename under each root."""
    candidate = Path(name)
    if candidate.is_absolute() and candidate.is_file():
        return candidate
    if comp_dir and (Path(comp_dir) / candidate).is_file():
        return Path(comp_dir) / candidate
    for root in roots:
        for tail in _tails(candidate):
            if (root / tail).is_file():
                return root / tail
        hits = sorted(root.rglob(candidate.name))
        if hits:
            return hits[0]
    return None


def _skipped_folder(relative: Path) -> bool:
    """Hidden folders (.git, .venv) and node_modules hold no sources of the project."""
    return any(part.startswith(".") or part == "node_modules" for part in relative.parts[:-1])


def _tails(path: Path) -> list[Path]:
    parts = [p for p in path.parts if p not in ("/", "..", ".")]
    return [Path(*parts[i:]) for i in range(len(parts))]


def source_files(paths: Iterable[Path]) -> list[Path]:
    """Every C/C++ source and header named, or found under the directories named."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in SOURCE_SUFFIXES + HEADER_SUFFIXES
                and not _skipped_folder(p.relative_to(path))
            )
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"{path}: no such file or directory")
    return found


@dataclass
class HotCode:
    """Where a profile's time goes, by source file and line, for the deep analyzers."""

    total: float
    # (file base name, line) -> weight of the samples whose leaf inline chain is there
    line_weight: dict[tuple[str, int], float]
    # file as the debug info names it -> (dso, self weight, hot functions), hottest first
    files: dict[str, tuple[str, float, list[str]]]

    def share(self, path: str, first: int, last: int) -> float:
        """Fraction of the run's weight on lines first..last of the file."""
        if self.total <= 0:
            return 0.0
        name = Path(path).name
        weight = sum(self.line_weight.get((name, line), 0.0) for line in range(first, last + 1))
        return min(1.0, weight / self.total)


def hot_code(profile) -> HotCode:  # type: ignore[no-untyped-def]
    """Self weight by physical function's source file, and by line of every frame of
    the leaf's inline chain (a loop inlined into its caller still counts on its lines)."""
    line_weight: dict[tuple[str, int], float] = {}
    file_weight: dict[str, float] = {}
    file_dso: dict[str, str] = {}
    file_functions: dict[str, dict[str, float]] = {}
    frames = profile.frames
    line_key = _line_keys(frames)
    for stack, weight, _count, _thread, _state in profile.rows():
        seen: set[tuple[str, int]] = set()
        for fid in stack:
            key = line_key[fid]
            if key is not None and key not in seen:
                seen.add(key)
                line_weight[key] = line_weight.get(key, 0.0) + weight
            frame = frames[fid]
            if not frame.inlined:
                if frame.file and not frame.kernel:
                    file_weight[frame.file] = file_weight.get(frame.file, 0.0) + weight
                    file_dso.setdefault(frame.file, frame.dso)
                    functions = file_functions.setdefault(frame.file, {})
                    functions[frame.function] = functions.get(frame.function, 0.0) + weight
                break
    files = {
        name: (
            file_dso[name],
            weight,
            sorted(file_functions[name], key=lambda f: -file_functions[name][f]),
        )
        for name, weight in sorted(file_weight.items(), key=lambda item: -item[1])
    }
    return HotCode(profile.total, line_weight, files)


def _line_keys(frames: list) -> list[tuple[str, int] | None]:
    """Each frame's (file base name, line), None without both: made once per frame, not
    once per frame of every stack (a Path per frame per stack was 450,000 of them, a
    third of `advise`'s CPU before its deep analyses on speedtest1's count run)."""
    names: dict[str, str] = {}
    keys: list[tuple[str, int] | None] = []
    for frame in frames:
        if frame.file and frame.line:
            name = names.get(frame.file)
            if name is None:
                name = names[frame.file] = Path(frame.file).name
            keys.append((name, frame.line))
        else:
            keys.append(None)
    return keys


def binary_path(dso: str, binaries: Iterable[dict]) -> Path | None:
    """The run's binary a frame's DSO refers to: by its file name (perf's frames), or
    by its whole path (callgrind's, in count runs)."""
    for entry in binaries:
        path = Path(entry.get("path", ""))
        if dso in (path.name, str(path)) and path.is_file():
            return path
    return None


def hot_units(
    hot: HotCode,
    binaries: list[dict],
    roots: list[Path],
    compile_commands: Path | None,
    limit: int,
) -> tuple[list[tuple[TranslationUnit, Path | None]], list[str]]:
    """The translation units holding the hottest code (at most `limit`), each with
    the binary it was built into; and notes on the hot files whose source is missing."""
    from .compile_db import compile_unit_for, flags_for, load_compile_commands

    table = load_compile_commands(compile_commands) if compile_commands else None
    units: list[tuple[TranslationUnit, Path | None]] = []
    missing: list[str] = []
    analysed: set[Path] = set()
    for name, (dso, weight, functions) in hot.files.items():
        if len(units) >= limit:
            break
        binary = binary_path(dso, binaries)
        if binary is not None and (is_packaged(str(binary)) or str(binary).startswith("[")):
            continue
        built = compile_unit_for(binary, name) if binary else None
        source_name = built.name if built and Path(name).suffix not in SOURCE_SUFFIXES else name
        if Path(source_name).suffix not in SOURCE_SUFFIXES and not table:
            continue  # a header no unit is known to include, and no neighbour's flags
        producer, comp_dir = (built.producer, built.comp_dir) if built else ("", "")
        path = find_source(source_name, roots, comp_dir)
        if path is None:
            if weight >= NOTE_MIN_SHARE * hot.total:
                missing.append(f"{name} ({', '.join(functions[:2])})")
            continue
        if path.resolve() in analysed:
            continue
        analysed.add(path.resolve())
        flags = flags_for(path, table, producer)
        directory = Path(flags.directory) if flags.directory else None
        unit = TranslationUnit(
            path, list(flags.args), flags.origin, directory, "", functions, producer, flags.compiler
        )
        units.append((unit, binary))
    notes = []
    if missing:
        notes.append(
            "no source found for the hot code in "
            + "; ".join(missing[:3])
            + ": point perfsleuth at the source tree with --src DIR"
        )
    return units, notes
