"""The flags a source file is built with: compile_commands.json, else the
DW_AT_producer string of the binary's debug info, else sensible defaults."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..binaries import DWARF_ERRORS, CompileUnit, binary_at
from ..errors import UserError

DEFAULT_C_FLAGS = ("-O2", "-std=gnu17")
# C++20: char8_t, the fix this analysis suggests, needs it.
DEFAULT_CXX_FLAGS = ("-O2", "-std=c++20")
# Flags of a producer string that change the code generated for a loop and that
# clang accepts too; the rest (-g, prefix maps, GCC-only -f options) is left out.
PRODUCER_FLAG_PREFIXES = (
    "-O",
    "-std=",
    "-march=",
    "-mavx",
    "-msse",
    "-mfma",
    "-D",
    "-fno-strict-aliasing",
    "-ffast-math",
    "-fno-vectorize",
    "-fno-tree-vectorize",
    "-funroll-loops",
)
# Flags with a separate argument that say where output goes, not how code is built.
OUTPUT_FLAGS_WITH_ARG = ("-o", "-MF", "-MT", "-MQ")
OUTPUT_FLAGS = ("-c", "-MD", "-MMD", "-MP", "-S", "-E")
# Build flags that would stop the analysis: warnings made errors (clang warns about
# GCC-only options), LTO (the object becomes bitcode, vectorised only at link time),
# sanitizers and GCC's analyzer (slow, and not what ships).
ANALYSIS_DROPPED_PREFIXES = ("-Werror", "-flto", "-fsanitize", "-fanalyzer", "-save-temps")
# Flags naming a path, which a compiler takes relative to the folder it runs in: the
# path as the next argument, or joined to the flag ("-Iinc", "--sysroot=/s").
SEPARATE_PATH_FLAGS = (
    "-I",
    "-F",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-include",
    "-imacros",
    "-include-pch",
    "-isysroot",
    "--sysroot",
)
# Flags adding a folder to the header search.
INCLUDE_FOLDER_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter")
JOINED_PATH_FLAGS = (
    "-I",
    "-F",
    "-isystem",
    "-iquote",
    "-idirafter",
    "--sysroot=",
    "-fmodule-map-file=",
    "-fprofile-use=",
    "-fprofile-instr-use=",
)
# Response files nested deeper than this are a loop (a file naming itself).
MAX_RESPONSE_DEPTH = 8


@dataclass(frozen=True)
class Flags:
    args: tuple[str, ...]
    origin: str  # "compile_commands.json", "DW_AT_producer", "defaults"
    directory: str = ""
    compiler: str = ""  # the entry's compiler command (its first word)


def load_compile_commands(path: Path) -> dict[Path, Flags]:
    """Source path (resolved) -> its flags, from a compile_commands.json."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable compile_commands.json ({exc})") from exc
    if not isinstance(entries, list):
        raise UserError(f"{path}: a compile_commands.json must be a JSON list of entries")
    table: dict[Path, Flags] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "file" not in entry:
            raise UserError(f'{path}: an entry without a "file": {str(entry)[:80]}')
        directory = path.parent.resolve() / entry.get("directory", ".")
        argv = entry.get("arguments") or shlex.split(entry.get("command", ""))
        source = (directory / entry["file"]).resolve()
        compiler = argv[0] if argv else ""
        argv = absolute_paths(expand_response_files(argv[1:], directory), directory)
        args = tuple(compile_args(argv, source))
        table[source] = Flags(args, path.name, str(directory), compiler)
    return table


def expand_response_files(argv: list[str], directory: Path, depth: int = 0) -> list[str]:
    """argv with each @file replaced by the arguments the file holds, the file read
    relative to the entry's directory as the compiler would; an @file that does not
    exist stays as it is (GCC passes it on as an argument too)."""
    expanded: list[str] = []
    for arg in argv:
        response = directory / arg[1:] if arg.startswith("@") else None
        if response is None or not response.is_file() or depth >= MAX_RESPONSE_DEPTH:
            expanded.append(arg)
            continue
        try:
            words = shlex.split(response.read_text(errors="replace"))
        except (OSError, ValueError) as exc:
            raise UserError(f"{response}: not a readable response file ({exc})") from exc
        expanded.extend(expand_response_files(words, directory, depth + 1))
    return expanded


def absolute_paths(argv: list[str], directory: Path) -> list[str]:
    """argv with the relative paths of include, sysroot and similar flags made
    absolute against the entry's directory, where the compiler ran."""
    return map_paths(argv, lambda value: _absolute(value, directory))


def moved_paths(argv: list[str], old: Path, new: Path) -> list[str]:
    """argv (absolute paths) with every path flag under `old` moved under `new`."""

    def moved(value: str) -> str:
        path = Path(value)
        return str(new / path.relative_to(old)) if path.is_relative_to(old) else value

    return map_paths(argv, moved)


def map_paths(argv: list[str], change: Callable[[str], str]) -> list[str]:
    """argv with `change` applied to the path of every include, sysroot and similar
    flag: the next argument (-I inc) or the rest of the flag (-Iinc, --sysroot=s)."""
    fixed: list[str] = []
    takes_path = False
    for arg in argv:
        fixed.append(change(arg) if takes_path else _joined(arg, change))
        takes_path = not takes_path and arg in SEPARATE_PATH_FLAGS
    return fixed


def _joined(arg: str, change: Callable[[str], str]) -> str:
    if arg in SEPARATE_PATH_FLAGS:
        return arg
    flag = next((f for f in JOINED_PATH_FLAGS if arg.startswith(f) and len(arg) > len(f)), "")
    return flag + change(arg[len(flag) :]) if flag else arg


def _absolute(value: str, directory: Path) -> str:
    if Path(value).is_absolute():
        return value
    return os.path.normpath(directory / value)


def compile_args(argv: list[str], source: Path) -> list[str]:
    """argv without the source file, the output options and the flags that would
    stop the analysis."""
    kept: list[str] = []
    skip_next = False
    for arg in argv:
        if skip_next:
            skip_next = False
        elif arg in OUTPUT_FLAGS_WITH_ARG:
            skip_next = True
        elif not _dropped(arg, source):
            kept.append(arg)
    return kept


def _dropped(arg: str, source: Path) -> bool:
    return (
        arg in OUTPUT_FLAGS
        or arg.startswith("-o")
        or Path(arg).name == source.name
        or arg.startswith(ANALYSIS_DROPPED_PREFIXES)
    )


def producer_flags(producer: str) -> list[str]:
    """The relevant flags of a DW_AT_producer string (GCC records them; clang
    does with -grecord-command-line)."""
    words = producer.split()
    flags = [w for w in words if w.startswith(PRODUCER_FLAG_PREFIXES)]
    # GCC names the language first: "GNU C++17 12.2.0 -O2 ..." means -std=gnu++17.
    if len(words) > 1 and words[0] == "GNU" and not any(f.startswith("-std=") for f in flags):
        dialect = words[1].lower()
        if dialect.startswith("c"):
            flags.append(f"-std=gnu{dialect[1:]}")
    return flags


CXX_HEADER_SUFFIXES = (".hpp", ".hh", ".hxx", ".inl", ".h++")
HEADER_SUFFIXES = (".h", *CXX_HEADER_SUFFIXES)
CXX_MARKERS = ("std::", "template", "namespace", "class ", "::")


def default_flags(source: Path) -> list[str]:
    """-O2 and the language's standard; headers get -x, a .h file by its contents."""
    if source.suffix == ".c":
        return list(DEFAULT_C_FLAGS)
    if source.suffix in CXX_HEADER_SUFFIXES:
        return ["-x", "c++", *DEFAULT_CXX_FLAGS]
    if source.suffix == ".h":
        text = source.read_text(errors="replace") if source.is_file() else ""
        if any(marker in text for marker in CXX_MARKERS):
            return ["-x", "c++", *DEFAULT_CXX_FLAGS]
        return ["-x", "c", *DEFAULT_C_FLAGS]
    return list(DEFAULT_CXX_FLAGS)


def flags_for(
    source: Path,
    compile_commands: dict[Path, Flags] | None = None,
    producer: str = "",
) -> Flags:
    """The best-known flags for one source file: its compile database entry, else
    (a header, or a unit the database misses) its nearest neighbour's there, else
    the producer's, else defaults."""
    if compile_commands:
        known = compile_commands.get(source.resolve())
        if known is not None:
            return known
        neighbour = nearest_entry(source.resolve(), compile_commands)
        if neighbour is not None:
            return neighbour_flags(source, neighbour, compile_commands[neighbour])
    if producer:
        from_producer = producer_flags(producer)
        if any(f.startswith("-O") for f in from_producer):
            return Flags(tuple(from_producer), "DW_AT_producer")
    return Flags(tuple(default_flags(source)), "defaults")


def nearest_entry(source: Path, compile_commands: dict[Path, Flags]) -> Path | None:
    """The database's source nearest to `source`: sharing the longest folder path,
    then of the same name (gstring.c for gstring.h), then the least deep below the
    shared folder, then of the same language (a C header's neighbour is a C unit)."""
    wanted_c = source.suffix == ".c" or (source.suffix == ".h" and not _cxx_header(source))

    def closeness(entry: Path) -> tuple[int, bool, int, bool, str]:
        shared = len(Path(os.path.commonpath([entry.parent, source.parent])).parts)
        deeper = len(entry.parent.parts) - shared
        return (
            shared,
            entry.stem == source.stem,
            -deeper,
            (entry.suffix == ".c") == wanted_c,
            str(entry),
        )

    return max(compile_commands, key=closeness, default=None)


def neighbour_flags(source: Path, neighbour: Path, flags: Flags) -> Flags:
    """A neighbour's flags for a file the database does not list: its include
    paths and macros are the project's (a header meant to be included only by an
    umbrella header often checks a macro the project's own build defines)."""
    args = [*flags.args]
    if source.suffix in HEADER_SUFFIXES:
        args = ["-x", "c" if neighbour.suffix == ".c" else "c++", *args]
    origin = f"{flags.origin} (as its neighbour {neighbour.name})"
    return Flags(tuple(args), origin, flags.directory, flags.compiler)


def _cxx_header(source: Path) -> bool:
    return source.suffix in CXX_HEADER_SUFFIXES or (
        source.suffix == ".h" and default_flags(source)[:2] == ["-x", "c++"]
    )


def compile_unit_for(binary: Path, file_name: str) -> CompileUnit | None:
    """The compile unit built from file_name — or, for a header, the first unit whose
    line table uses it."""
    found = binary_at(binary)
    dwarf = found.dwarf() if found else None
    if found is None or dwarf is None:
        return None
    wanted = Path(file_name).name
    including = None
    try:
        for unit in found.compile_units:
            if Path(unit.name).name == wanted:
                return unit
            if including is None and _uses_file(dwarf, dwarf.get_CU_at(unit.offset), wanted):
                including = unit
    except DWARF_ERRORS:
        return None
    return including


def _uses_file(dwarf, cu, name: str) -> bool:  # type: ignore[no-untyped-def]
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return False
    return any(
        Path(entry.name.decode(errors="replace")).name == name
        for entry in program.header.file_entry
    )


def include_folders(flags: list[str], kinds: tuple[str, ...] = INCLUDE_FOLDER_FLAGS) -> list[str]:
    """The folders the flags add to the header search, of those kinds, in order: the
    folder as the next argument, or joined to the flag ("-Iinc")."""
    found = []
    for n, flag in enumerate(flags):
        if flag in kinds:
            found.extend(flags[n + 1 : n + 2])
        elif joined := next((k for k in kinds if flag.startswith(k)), None):
            found.append(flag[len(joined) :])
    return found
