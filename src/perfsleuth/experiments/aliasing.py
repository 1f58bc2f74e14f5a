"""`advise --verify` for aliasing-write findings: apply the fix to a scratch copy of
the translation unit, recompile it with the user's compiler (GCC or clang, as
toolchain.py finds it) and flags, and compare that compiler's verdict and the loop's
machine code before and after. The user's files are only read.

The changes, in the order that compiler makes worth trying (aliasing_fixes.py):
the written byte type becomes char8_t where it is declared, in the unit or in a
header of the project (C++ only; the unit is then built as C++20; not with
-fno-strict-aliasing, where it is moot), and the repeated reads are hoisted into
locals before the loop (`__typeof__(read) perfsleuth_hoisted_0 = read;`). Each change
is built in an overlay of the source tree (`_overlay`: folders of symlinks to the
user's files, the changed files real copies, the unit's include flags moved onto
it), so a changed header is what every include of it finds. The best change that
compiles is the proof; one that does not compile is reported with the compiler's
error, never skipped silently. With the build command (`--build`), the changed
program is also built and timed against the original (verify.py): `timed_sides`
copies the build's folder, changes the files there, and builds both.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analyzers import Context
from ..model.findings import Finding
from ..static_analysis import byte_map, machine_code
from ..static_analysis.compile_db import INCLUDE_FOLDER_FLAGS, include_folders, moved_paths
from ..static_analysis.compiler_remarks import CompileError, Remark, compile_unit, remark_for_loop
from ..static_analysis.gcc_remarks import gcc_remarks
from ..static_analysis.source import TranslationUnit
from ..static_analysis.toolchain import Toolchain, toolchain_of
from . import build
from .runner import Side

BYTE_TYPES = re.compile(
    r"\b(?:std::)?u?int8_t\b|\bunsigned\s+char\b|\bsigned\s+char\b|\bstd::byte\b"
)
VECTOR_SHAPE = re.compile(r"vectorization width: (\d+), interleaved count: (\d+)")
HOISTED = "perfsleuth_hoisted"
DATA_POINTER = "perfsleuth_data"
READ_ONLY_METHODS = ("size", "length", "empty", "data")
ELEMENT = "perfsleuth_element"
ASSIGNMENT = r"(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
# After an element: an assignment, ++/--, or a member or index (not the whole value).
WHOLE_VALUE_NOT = re.compile(rf"\s*(?:{ASSIGNMENT}|\.|->|\[)")
# Before an element: ++/--, or its address taken.
WRITTEN_BEFORE = re.compile(r"(?:\+\+|--|(?:^|[(,=;{}]|return)\s*&)\s*$")
CXX20 = "-std=c++20"
# A call (not a keyword's parenthesis): code the compiler cannot see may read memory.
# a block opened or closed, or a way out of it: the write-back would not run on every path
LEAVES = re.compile(r"[{}]|\b(?:return|goto|break|continue)\b")
SYSTEM_HEADER_FOLDERS = ("/usr/include/", "/usr/local/include/", "/usr/lib/", "/lib/")
CALL = re.compile(r"\b(?!(?:if|while|for|switch|sizeof|return)\b)[A-Za-z_]\w*\s*\(")
# A member read through a pointer or an object: `gstring->str`, `s.len`.
MEMBER = re.compile(r"(?<![\w.>])[A-Za-z_]\w*(?:->|\.)[A-Za-z_]\w*(?![\w(])(?!\s*(?:->|\.|\())")
# Standards that have char8_t.
CHAR8_T_STANDARDS = re.compile(r"-std=(?:c|gnu)\+\+2[0-9a-z]$")
STRAIGHT_LINE = "straight-line"
CHAR8_T = "write through char8_t"
# Folders of a build tree not copied for the changed build.
NOT_COPIED = (".git", ".perfsleuth", "node_modules")


@dataclass
class _Change:
    """A change to try: what it is, the unit with the flags to build it with, and the
    new text of each file it changes (the unit, or the header declaring the type)."""

    description: str
    unit: TranslationUnit
    files: dict[Path, str]
    standard: str = ""  # why it is built as another C++ standard than the unit's
    blocked: bool = False  # the loop rewritten in blocks (byte_map.py): its block loop counts


@dataclass
class _Build:
    remark: Remark | None
    loop: machine_code.LoopCode | None
    per_element: float | None  # loop instructions per source iteration
    straight_line: bool = False  # no loop: `loop` is the code's straight run
    block: int = 1  # source iterations one iteration of `loop` does (byte_map.py's blocks)


def verify_aliasing(finding: Finding, ctx: Context | None = None) -> dict[str, Any] | None:
    """The compile-time proof of an aliasing-write finding, or None when the finding
    carries no translation unit or no change could be applied (reason in ctx.notes)."""
    match = finding.details.get("match")
    if not match:
        return None
    source = Path(match["file"])
    if not source.is_file():
        return None
    unit = unit_of(finding, source)
    if unit.path != source and _system_header(source, unit):
        _note(
            ctx,
            f"{finding.rule} not verified: the code is in {source}, a system header, not "
            "the project's to change (its library's own build is where the fix belongs)",
        )
        return None
    with tempfile.TemporaryDirectory(prefix="perfsleuth-verify-") as tmp:
        try:
            return _compare(unit, toolchain_of(unit), match, Path(tmp), ctx, finding.rule)
        except CompileError as exc:
            _note(ctx, f"{finding.rule} not verified: the unit does not compile ({exc})")
            return None


def unit_of(finding: Finding, source: Path) -> TranslationUnit:
    """The unit as the finding's analysis built it, with the compiler that builds it:
    for code in a header, the unit that includes it (a header such as glib's gstring.h
    may refuse to be built alone)."""
    details = finding.details
    including = Path(details.get("unit") or source)
    return TranslationUnit(
        including if including.is_file() else source,
        list(details.get("flags", [])),
        details.get("flags_origin", "defaults"),
        Path(details["directory"]) if details.get("directory") else None,
        producer=details.get("producer", ""),
        compiler=details.get("compiler_driver", ""),
    )


def _compare(
    unit: TranslationUnit,
    toolchain: Toolchain,
    match: dict[str, Any],
    scratch: Path,
    ctx: Context | None,
    rule: str,
) -> dict[str, Any] | None:
    """Build the unit, then each change in turn until one compiles, and compare; the
    changes that did not compile are named in the result (and in ctx.notes)."""
    # The lines are in the match's file: the unit, or a header it includes.
    span = (
        int(match["line"]),
        int(match["end_line"]),
        match["pattern"] == STRAIGHT_LINE,
        Path(match["file"]),
    )
    before = _build(unit, toolchain, unit.path, scratch / "before.o", span)
    failed: list[str] = []
    built: list[tuple[_Change, _Build]] = []
    for n, change in enumerate(_changes(unit, toolchain, match)):
        overlay = scratch / f"patched-{n}" / "tree"
        try:
            copy, moved, root = _overlay(change, overlay)
            output = scratch / f"after-{n}.o"
            after = _build(moved, toolchain, copy, output, span, change.files, change.blocked)
        except CompileError as exc:
            error = str(exc).replace(str(overlay), str(root))  # the user's paths, not ours
            failed.append(f"{change.description} does not compile with {toolchain.name}: {error}")
            _note(ctx, f"{rule}: {failed[-1]}")
            continue
        built.append((change, after))
    if not built:
        said = "compiled in a scratch copy" if failed else "applies to this code"
        _note(ctx, f"{rule} not verified: no suggested change {said}")
        return None
    change, after = min(built, key=lambda b: _worse(b[1]))
    proof = _result(change.description, toolchain, before, after, failed)
    proof["also_tried"] = [
        _summary(_result(other.description, toolchain, before, code, []))
        for other, code in built
        if other is not change
    ]
    proof["standard"] = change.standard
    proof["not_tried"] = _not_tried(unit, match)
    for said in (proof["standard"], proof["not_tried"]):
        if said:
            proof["summary"] += f" ({said})"
    proof["patched_files"] = {str(path): text for path, text in change.files.items()}
    return proof


def _not_tried(unit: TranslationUnit, match: dict[str, Any]) -> str:
    """Why char8_t was not tried though the written type is a byte type: it is
    declared in a system header, which is not the project's to change."""
    declared = match.get("write_declared") or []
    if not declared or not BYTE_TYPES.fullmatch(match["write_type"]):
        return ""
    if not _system_header(Path(declared[0]), unit):
        return ""
    return (
        f"char8_t not tried: the written type is declared in {Path(declared[0]).name}:"
        f"{declared[1]}, a system header; change the type of what the loop writes"
    )


def _system_header(path: Path, unit: TranslationUnit) -> bool:
    """Is the file the system's (under /usr/include, /usr/lib, /lib, or an -isystem
    folder of the unit), not the project's? A project under /usr/src or /usr/local/src
    is the user's."""
    if str(path).startswith(SYSTEM_HEADER_FOLDERS):
        return True
    return any(path.is_relative_to(folder) for folder in _include_dirs(unit.flags, ("-isystem",)))


def _include_dirs(flags: list[str], kinds: tuple[str, ...] = INCLUDE_FOLDER_FLAGS) -> list[Path]:
    return [Path(folder) for folder in include_folders(flags, kinds)]


def _worse(after: _Build) -> tuple[bool, int, float]:
    """Orders the changes' builds best first: vectorised, then fewer reloads, then
    fewer instructions per element."""
    vectorized = after.remark is not None and after.remark.vectorized
    reloads = len(after.loop.reloads) if after.loop else 0
    return (not vectorized, reloads, after.per_element or 0.0)


def _note(ctx: Context | None, text: str) -> None:
    if ctx is not None:
        ctx.notes.append(text)


def _changes(unit: TranslationUnit, toolchain: Toolchain, match: dict[str, Any]) -> list[_Change]:
    """Each change worth trying with this compiler, best first: char8_t first where the
    compiler then vectorises (clang, GCC at -O3), hoisting first where it stays scalar
    anyway (GCC -O2); no char8_t under -fno-strict-aliasing, where it changes nothing."""
    code = Path(match["file"])
    text = code.read_text()
    found = []
    if unit.is_cxx and toolchain.strict_aliasing and BYTE_TYPES.fullmatch(match["write_type"]):
        found.extend(_char8_t_changes(unit, match.get("write_declared") or []))
    hoisted = _hoist(text, match)
    if hoisted is not None:
        found.append(_Change(_hoist_said(match, *hoisted[1:]), unit, {code: hoisted[0]}))
    counted = _counter_kept(text, match) if hoisted is None else None
    if counted is not None:
        found.append(_Change(counted[1], unit, {code: counted[0]}))
    if toolchain.family == "gcc" and not toolchain.versions_loops:
        found.reverse()
    blocked = _blocked(text, match)
    if blocked is not None:
        found.insert(0, _Change(byte_map.CHANGE, unit, {code: blocked}, blocked=True))
    return found


def _blocked(text: str, match: dict[str, Any]) -> str | None:
    """The text with the matched loop, a byte map through a switch, computed without
    branches in blocks (byte_map.py); None for any other loop."""
    if match["pattern"] == STRAIGHT_LINE:
        return None
    lines = text.splitlines(keepends=True)
    first, last = int(match["line"]) - 1, int(match["end_line"])
    keyword = re.search(r"\bfor\b", lines[first])
    if keyword is None:
        return None
    at = keyword.start()
    loop = byte_map.blocked("".join([lines[first][at:], *lines[first + 1 : last]]))
    if loop is None:
        return None
    lines[first:last] = [lines[first][:at] + loop]
    return "".join(lines)


def _hoist_said(match: dict[str, Any], reads: list[str], elements: list[str]) -> str:
    where = "the store" if match["pattern"] == STRAIGHT_LINE else "the loop"
    said = [f"hoist {', '.join(f'`{r}`' for r in reads)} into locals before {where}"]
    if elements:
        said.append(f"read {', '.join(f'`{e}`' for e in elements)} once per iteration")
    return " and ".join(said)


def _char8_t_changes(unit: TranslationUnit, declared: list) -> list[_Change]:
    """The written byte type made char8_t where it is declared (the field, the variable
    or its typedef; in the unit or in a header of the project), then, as a second
    change, every byte type of that file (the type's accessors and callers follow it).
    Where the declaration is not known, every byte type of the unit; none where it is
    in a system header. Built as C++20, which char8_t needs."""
    path = Path(declared[0]) if declared else unit.path
    if _system_header(path, unit) or not path.is_file():
        return []
    flags = [f for f in unit.flags if not f.startswith("-std=")] + [CXX20]
    standard = _standard_note(unit.flags)
    text = path.read_text()
    everywhere = BYTE_TYPES.sub("char8_t", text)
    in_unit = path.resolve() == unit.path.resolve()
    where = "" if in_unit else f" in {path.name}"
    changes = []
    if declared:
        lines = text.splitlines(keepends=True)
        at = int(declared[1]) - 1
        lines[at] = BYTE_TYPES.sub("char8_t", lines[at])
        retyped = "".join(lines)
        changes.append(_Change(f"{CHAR8_T}{where}", _like(unit, flags), {path: retyped}, standard))
    if not changes or everywhere != changes[0].files[path]:
        every = f"{CHAR8_T}, every byte type of {'the file' if in_unit else path.name}"
        changes.append(_Change(every, _like(unit, flags), {path: everywhere}, standard))
    return changes


def _standard_note(flags: list[str]) -> str:
    """What the proof says when char8_t made it build the unit as C++20."""
    standards = [f for f in flags if f.startswith("-std=")]
    if standards and CHAR8_T_STANDARDS.match(standards[-1]):
        return ""
    said = f"the unit's flags say {standards[-1]}" if standards else "the unit's flags name none"
    return f"built as C++20, which char8_t needs ({said}): build the program as C++20 too"


def _like(unit: TranslationUnit, flags: list[str]) -> TranslationUnit:
    return TranslationUnit(
        unit.path,
        flags,
        unit.flags_origin,
        unit.directory,
        producer=unit.producer,
        compiler=unit.compiler,
    )


def _overlay(change: _Change, copy: Path) -> tuple[Path, TranslationUnit, Path]:
    """The unit's path in an overlay of its source tree at `copy`, the unit with its
    include flags moved onto the overlay, and the folder the overlay stands for: the
    folder holding the unit, the changed files and every include folder a changed
    header is reached through. In the overlay the folders on the way to those files
    are real, their other entries symlinks to the user's files, and the changed files
    new files: a quoted include next to the header and one through `-I` both find it."""
    unit = change.unit
    headers = [path for path in change.files if path != unit.path]
    reaching = [d for d in _include_dirs(unit.flags) if any(h.is_relative_to(d) for h in headers)]
    paths = [str(p) for p in (unit.path, *change.files)]
    root = Path(os.path.commonpath([*paths, *map(str, reaching)]))
    if root == unit.path:
        root = unit.path.parent
    for path in (unit.path, *change.files):
        _open_folders(root, copy, path.relative_to(root).parent)
    for path, text in change.files.items():
        target = copy / path.relative_to(root)
        target.unlink()  # the symlink to the user's file: never written through
        target.write_text(text)
    moved = _like(unit, moved_paths(unit.flags, root, copy))
    return copy / unit.path.relative_to(root), moved, root


def _open_folders(root: Path, copy: Path, relative: Path) -> None:
    """Make copy/relative's folders real, each holding symlinks to its original's entries."""
    original, made = root, copy
    if not made.is_dir():
        _linked_folder(original, made)
    for part in relative.parts:
        original, made = original / part, made / part
        if made.is_symlink():
            made.unlink()
            _linked_folder(original, made)


def _linked_folder(original: Path, made: Path) -> None:
    made.mkdir(parents=True)
    for entry in original.iterdir():
        (made / entry.name).symlink_to(entry)


def _check_reached(depfile: Path, changed: dict[Path, str]) -> None:
    """A CompileError when the compiler read the original of a changed file."""
    if not changed or not depfile.is_file():
        return
    originals = {os.path.realpath(path): path for path in changed}
    text = depfile.read_text().replace("\\\n", " ")
    for word in text.split():
        hit = originals.get(os.path.realpath(word.rstrip(":")))
        if hit is not None:
            raise CompileError(
                f"the build still read the original {hit.name} ({hit}), not the changed copy"
            )


def _hoist(text: str, match: dict[str, Any]) -> tuple[str, list[str], list[str]] | None:
    """The text with the loop's repeated reads computed once, before the loop: the
    reads as written (`in.size()`), then the data pointer of each container the loop
    indexes (`in[i]` becomes `perfsleuth_data_0[i]`, `in.data()` read before it); and
    each element the body reads whole more than once (`v[i]`, which GCC loads again
    after every byte store of Monero's bulletproof_PROVE loop) read once at the top of
    the body. Straight-line code: its read, once, before the match's first statement.
    With the reads hoisted and the elements read once per iteration."""
    lines = text.splitlines(keepends=True)
    first, last = int(match["line"]) - 1, int(match["end_line"])
    body = "".join(lines[first:last])
    if match["pattern"] == STRAIGHT_LINE:
        keyword = re.search(r"\S", lines[first])
        # A read the code also writes (glib's `gstring->len++`) is not a value to keep.
        hoistable = [match["read"]] if not _written(match["read"], body) else []
    else:
        keyword = re.search(r"\b(for|while|do)\b", lines[first])
        hoistable = match.get("hoistable", [])
    reads = [r for r in hoistable if r in body]
    containers = [c for c in match.get("indexed", []) if _only_indexed(c, body)]
    if keyword is None or not (reads or containers):
        return None
    at = keyword.start()
    head, loop = lines[first][:at], "".join([lines[first][at:], *lines[first + 1 : last]])
    loop, elements = _elements_read_once(loop, containers)
    for n, read in enumerate(sorted(reads, key=len, reverse=True)):
        name = f"{HOISTED}_{n}"
        head += f"__typeof__({read}) {name} = {read}; "
        loop = loop.replace(read, name)
    for n, container in enumerate(containers):
        name = f"{DATA_POINTER}_{n}"
        head += f"auto* {name} = {container}.data(); "
        loop = re.sub(rf"\b{re.escape(container)}\s*\[", f"{name}[", loop)
    lines[first:last] = [head + loop]
    return "".join(lines), [*reads, *(f"{c}.data()" for c in containers)], elements


def _counter_kept(text: str, match: dict[str, Any]) -> tuple[str, str] | None:
    """Straight-line code whose repeated read it also counts up or down (glib's
    `gstring->str[gstring->len++] = c; gstring->str[gstring->len] = 0;`): the text
    with that read and every other member read it spells twice and never writes
    (`gstring->str`) kept in locals from before the match's first statement, the
    counter written back after its last; and what the change is. None unless the
    counter is only ever ++/--'d, no call follows its first change (a callee would read
    the stale memory), and the code from there to the write-back opens or closes no
    block and leaves by no return, goto, break or continue (it runs whenever the counter
    changed)."""
    read = match["read"]
    lines = text.splitlines(keepends=True)
    first, last = int(match["line"]) - 1, int(match["end_line"])
    body = "".join(lines[first:last])
    spelled = re.escape(read)
    counted = re.compile(rf"{spelled}(?!\w)\s*(?:\+\+|--)|(?:\+\+|--)\s*{spelled}(?!\w)")
    change = counted.search(body)
    if match["pattern"] != STRAIGHT_LINE or change is None:
        return None
    after = body[change.start() :]
    if _written(read, counted.sub("", body)) or CALL.search(after) or LEAVES.search(after):
        return None
    if not lines[last - 1].rstrip().endswith(";"):
        return None
    members = [m for m in dict.fromkeys(MEMBER.findall(body)) if m != read]
    twice = [m for m in members if len(re.findall(_word(m), body)) > 1 and not _written(m, body)]
    kept = [read, *twice]
    indent = re.search(r"\S", lines[first])
    if indent is None:
        return None
    head = lines[first][: indent.start()]
    span = "".join([lines[first][indent.start() :], *lines[first + 1 : last]])
    for n, name in enumerate(kept):
        head += f"__typeof__({name}) {HOISTED}_{n} = {name}; "
        span = re.sub(_word(name), f"{HOISTED}_{n}", span)
    span = span.rstrip("\n") + f" {read} = {HOISTED}_0;\n"
    lines[first:last] = [head + span]
    reads = ", ".join(f"`{name}`" for name in kept)
    said = f"hoist {reads} into locals before the store, and write `{read}` back after it"
    return "".join(lines), said


def _word(spelled: str) -> str:
    return rf"(?<![\w.>]){re.escape(spelled)}(?!\w)"


def _written(read: str, code: str) -> bool:
    """Does the code assign the read's memory, or ++/-- it?"""
    spelled = re.escape(read)
    return bool(re.search(rf"{spelled}\s*{ASSIGNMENT}|(?:\+\+|--)\s*{spelled}", code))


def _elements_read_once(loop: str, containers: list[str]) -> tuple[str, list[str]]:
    """The loop with each element of the containers that its body reads whole more
    than once and never writes (`v[i]`, at an index the body does not change) read
    into a local at the top of the body; and those elements. A body without braces
    is left as it is."""
    opened = _body_opened(loop)
    if opened is None:
        return loop, []
    head, body = loop[:opened], loop[opened:]
    elements = [e for c in containers for e in _repeated_elements(c, body) if _read_only(e, body)]
    for n, element in enumerate(elements):
        name = f"{ELEMENT}_{n}"
        body = _spelled(element).sub(name, body)
        head += f" const auto {name} = {element};"
    return head + body, elements


def _body_opened(loop: str) -> int | None:
    """Where the loop's body starts, just after its `{`; None without braces."""
    keyword = re.match(r"(?:for|while)\s*\(|do\b", loop)
    if keyword is None:
        return None
    end = keyword.end()
    if keyword[0].endswith("("):
        depth = 1
        while depth and end < len(loop):
            depth += {"(": 1, ")": -1}.get(loop[end], 0)
            end += 1
    brace = re.compile(r"\s*\{").match(loop, end)
    return brace.end() if brace else None


def _repeated_elements(container: str, body: str) -> list[str]:
    """The element expressions (`v[i]`) of the container that the body spells more
    than once, as spelled."""
    spelled = re.findall(rf"(?<![\w.>]){re.escape(container)}\s*\[[^\[\]]+\]", body)
    return [e for e, count in Counter(spelled).items() if count > 1]


def _read_only(element: str, body: str) -> bool:
    """Is every use of the element a read of its whole value (no store to it or to a
    member, no ++, no address taken, no member read that would copy a whole struct),
    and the variables of its index unchanged in the body?"""
    for use in _spelled(element).finditer(body):
        if WRITTEN_BEFORE.search(body[: use.start()]) or WHOLE_VALUE_NOT.match(body, use.end()):
            return False
    index = element[element.index("[") + 1 : -1]
    for name in set(re.findall(r"[A-Za-z_]\w*", index)):
        if re.search(rf"(?:\+\+|--)\s*{name}\b|\b{name}\s*{ASSIGNMENT}", body):
            return False
    return True


def _spelled(element: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.>]){re.escape(element)}")


def _only_indexed(container: str, body: str) -> bool:
    """Does the loop only index the container and ask its size? (A push_back or a
    resize would move its data.)"""
    methods = re.findall(rf"\b{re.escape(container)}\s*(?:\.|->)\s*(\w+)", body)
    return all(m in READ_ONLY_METHODS for m in methods)


def _build(
    unit: TranslationUnit,
    toolchain: Toolchain,
    source: Path,
    output: Path,
    span: tuple[int, int, bool, Path],
    changed: dict[Path, str] | None = None,
    blocked: bool = False,
) -> _Build:
    """Compile with the user's compiler: GCC's remarks when GCC builds the unit,
    else clang-16's. Straight-line code (span[2]) has no loop: its code's reloads.
    A CompileError too when the build read one of the `changed` files' originals
    (an include the overlay does not catch): the change would not be what was built."""
    first, last, straight_line, lines_in = span
    depfile = output.with_suffix(".d")
    unit = _like(unit, [*unit.flags, "-MD", "-MF", str(depfile)])
    if toolchain.family == "gcc":
        remarks = gcc_remarks(unit, source, output)
    else:
        remarks, _ = compile_unit(unit, source, output)
    _check_reached(depfile, changed or {})
    if straight_line:
        code = machine_code.straight_line_code(output, lines_in.name, first, last)
        return _Build(None, code, None, straight_line=True)
    remark = remark_for_loop(remarks, lines_in, first, last)
    if blocked:  # the block loop's remark, not the outer loop's nor the rest's
        remark = next((r for r in remarks if _block_remark(r, lines_in, first)), remark)
    vectorized = remark is not None and remark.vectorized
    loop = (
        _block_loop(output, lines_in.name, first, last)
        if vectorized and blocked
        else machine_code.vector_loop(output, lines_in.name, first, last)
        if vectorized
        else machine_code.loop_code(output, lines_in.name, first, last, prefer_reloads=False)
    )
    # One iteration of the block loop maps a block: both compilers unroll the
    # vectorised 16-byte loop inside it whole.
    block = byte_map.BLOCK if blocked and vectorized else 1
    per_element = None
    if loop is not None:
        shape = VECTOR_SHAPE.search(remark.message) if remark is not None and vectorized else None
        elements = block if blocked else int(shape[1]) * int(shape[2]) if shape else 1
        per_element = len(loop.instructions) / elements
    return _Build(remark, loop, per_element, block=block)


def _block_loop(binary: Path, source: str, first: int, last: int) -> machine_code.LoopCode | None:
    """The block loop: the innermost machine loop of those lines doing SIMD work (a
    jump back from the string's resize code makes a larger one around it)."""
    loops = [loop for loop in machine_code.machine_loops(binary, source, first, last) if loop.simd]
    return min(loops, key=lambda loop: len(loop.instructions), default=None)


def _block_remark(remark: Remark, source: Path, line: int) -> bool:
    """Is it the compiler's word that it vectorised the block loop (on the loop's line)?"""
    return Path(remark.file).name == source.name and remark.line == line and remark.vectorized


def _result(
    change: str, toolchain: Toolchain, before: _Build, after: _Build, failed: list[str]
) -> dict[str, Any]:
    was = before.remark is not None and before.remark.vectorized
    now = after.remark is not None and after.remark.vectorized
    result: dict[str, Any] = {
        "method": f"recompiled a scratch copy with {_compiler_used(toolchain)}",
        "compiler": toolchain.name,
        "change": change,
        "not_compiled": failed,
        "vectorized_before": was,
        "vectorized_after": now,
        "remark_before": before.remark.describe() if before.remark else "",
        "remark_after": after.remark.describe() if after.remark else "",
        "loop_instructions_before": len(before.loop.instructions) if before.loop else None,
        "loop_instructions_after": len(after.loop.instructions) if after.loop else None,
        "reloads_before": len(before.loop.reloads) if before.loop else None,
        "reloads_after": len(after.loop.reloads) if after.loop else None,
        "byte_stores_before": len(before.loop.byte_stores) if before.loop else None,
        "byte_stores_after": len(after.loop.byte_stores) if after.loop else None,
        "instructions_per_element_before": _round(before.per_element),
        "instructions_per_element_after": _round(after.per_element),
    }
    result["straight_line"] = before.straight_line
    result["block_after"] = after.block
    result["loop_removed"] = after.remark is None and after.loop is None
    result["summary"] = _summary(result)
    return result


def _compiler_used(toolchain: Toolchain) -> str:
    if toolchain.family == "gcc":
        return toolchain.name
    if toolchain.major and toolchain.major != "16":
        return f"clang-16 (the unit's compiler is {toolchain.name}, not installed here)"
    return "clang-16"


def timed_sides(
    finding: Finding,
    proof: dict[str, Any],
    build_command: str,
    workload: list[str],
    root: Path,
    cwd: str,
) -> list[Side]:
    """The original program and the changed one, each built by the user's build command
    into its own $OUT: the original in `cwd`, the changed one in a copy of `cwd` with
    the proof's change applied (to the unit, or to the header declaring the written
    type). A UserError when a changed file is not inside `cwd`."""
    tree = Path(cwd).resolve()
    changed_files = {Path(path).resolve(): text for path, text in proof["patched_files"].items()}
    for source in changed_files:
        if not source.is_relative_to(tree):
            raise build.BuildFailed(
                f"{source} is outside the build's folder {tree}: the changed copy cannot be built"
            )
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-changed-") as tmp:
        copy = Path(tmp) / tree.name
        _copy_tree(tree, copy, root.resolve())
        for source, text in changed_files.items():
            (copy / source.relative_to(tree)).write_text(text)
        changed = build.Builder(build_command, root, str(copy)).build("changed", {})
    original = build.Builder(build_command, root, str(tree)).build("baseline", {})
    return [
        build.workload_side("baseline", workload, original, cwd),
        build.workload_side(proof["change"], workload, changed, cwd),
    ]


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _copy_tree(tree: Path, copy: Path, scratch: Path) -> None:
    """The build's folder without version control and without perfsleuth's own
    scratch folder (the store may live inside the tree)."""

    def ignored(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n in NOT_COPIED or scratch.is_relative_to(Path(folder) / n)]

    try:
        shutil.copytree(tree, copy, symlinks=True, ignore=ignored)
    except (OSError, shutil.Error) as exc:
        raise build.BuildFailed(f"could not copy {tree} to build the change: {exc}") from exc


ASSUMES = (
    " assumes what the compiler could not: that the byte stores never change what is "
    "read; check the two cannot overlap)"
)
HOIST_ASSUMES = f" (a hoist{ASSUMES}"
BLOCK_ASSUMES = f" (reading a block before writing it{ASSUMES}"


def _summary(r: dict[str, Any]) -> str:
    compiler = r["compiler"]
    said_after = "".join(f" ({failure})" for failure in r["not_compiled"])
    if r["change"].startswith("hoist"):
        said_after = HOIST_ASSUMES + said_after
    elif r["change"] == byte_map.CHANGE:
        said_after = BLOCK_ASSUMES + said_after
    if r.get("straight_line"):
        return (
            f"{r['change']}: {compiler}'s code loads memory again after the byte stores "
            f"{r['reloads_before']} -> {r['reloads_after']} times{said_after}"
        )
    verdict = (
        f"{compiler} no longer emits the loop (it became a library call such as memset, "
        "or vanished)"
        if r["loop_removed"]
        else f"{compiler} now vectorizes the loop"
        if r["vectorized_after"] and not r["vectorized_before"]
        else f"{compiler} still does not vectorize the loop"
        if not r["vectorized_after"]
        else "the loop was already vectorized"
    )
    counts = ""
    if r["instructions_per_element_before"] and r["instructions_per_element_after"]:
        counts = (
            f"; loop instructions per element {r['instructions_per_element_before']:g} -> "
            f"{r['instructions_per_element_after']:g}, byte stores {r['byte_stores_before']} -> "
            f"{r['byte_stores_after']}, loads again {r['reloads_before']} -> {r['reloads_after']}"
            + (f" (once per {r['block_after']} bytes)" if r.get("block_after", 1) > 1 else "")
        )
    return f"{r['change']}: {verdict}{counts}{said_after}"
