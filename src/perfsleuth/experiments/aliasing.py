"""`advise --verify` for aliasing-write findings: apply the fix to a scratch copy of
the translation unit, recompile it with the user's compiler (GCC or clang, as
toolchain.py finds it) and flags, and compare that compiler's verdict and the loop's
machine code before and after. The user's files are only read.

The changes, in the order that compiler makes worth trying (aliasing_fixes.py):
the written byte type becomes char8_t (C++ only; the unit is then built as C++20;
not with -fno-strict-aliasing, where it is moot), and the repeated reads are hoisted
into locals before the loop (`__typeof__(read) perfsleuth_hoisted_0 = read;`). The
first that compiles is the proof; one that does not compile is reported with the
compiler's error, never skipped silently. With the build command (`--build`), the
changed program is also built and timed against the original (verify.py):
`timed_sides` copies the build's folder, changes the file there, and builds both.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analyzers import Context
from ..model.findings import Finding
from ..static_analysis import machine_code
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
CXX20 = "-std=c++20"
STRAIGHT_LINE = "straight-line"
CHAR8_T = "write through char8_t"
# Folders of a build tree not copied for the changed build.
NOT_COPIED = (".git", ".perfsleuth", "node_modules")


@dataclass
class _Build:
    remark: Remark | None
    loop: machine_code.LoopCode | None
    per_element: float | None  # loop instructions per source iteration
    straight_line: bool = False  # no loop: `loop` is the code's straight run


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
    with tempfile.TemporaryDirectory(prefix="perfsleuth-verify-") as tmp:
        try:
            return _compare(unit, toolchain_of(unit), match, Path(tmp), ctx, finding.rule)
        except CompileError as exc:
            _note(ctx, f"{finding.rule} not verified: the unit does not compile ({exc})")
            return None


def unit_of(finding: Finding, source: Path) -> TranslationUnit:
    """The unit as the finding's analysis built it, with the compiler that builds it."""
    details = finding.details
    return TranslationUnit(
        source,
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
    span = (int(match["line"]), int(match["end_line"]), match["pattern"] == STRAIGHT_LINE)
    before = _build(unit, toolchain, unit.path, scratch / "before.o", span)
    failed: list[str] = []
    built: list[tuple[str, str, _Build]] = []
    for n, (change, patched_unit, text) in enumerate(_changes(unit, toolchain, match)):
        copy = scratch / f"patched-{n}" / unit.path.name
        copy.parent.mkdir()
        copy.write_text(text)
        try:
            after = _build(patched_unit, toolchain, copy, scratch / f"after-{n}.o", span)
        except CompileError as exc:
            failed.append(f"{change} does not compile with {toolchain.name}: {exc}")
            _note(ctx, f"{rule}: {failed[-1]}")
            continue
        built.append((change, text, after))
    if not built:
        _note(ctx, f"{rule} not verified: no suggested change compiled in a scratch copy")
        return None
    change, text, after = min(built, key=lambda b: _worse(b[2]))
    proof = _result(change, toolchain, before, after, failed)
    proof["also_tried"] = [
        _summary(_result(other, toolchain, before, code, []))
        for other, _, code in built
        if other != change
    ]
    proof["not_tried"] = _not_tried(unit, match)
    if proof["not_tried"]:
        proof["summary"] += f" ({proof['not_tried']})"
    proof["patched_text"] = text
    return proof


def _not_tried(unit: TranslationUnit, match: dict[str, Any]) -> str:
    """Why char8_t was not tried though the written type is a byte type: it is
    declared in another file (a header), which the scratch copy does not change."""
    declared = match.get("write_declared") or []
    if not declared or not BYTE_TYPES.fullmatch(match["write_type"]):
        return ""
    if Path(declared[0]).resolve() == unit.path.resolve():
        return ""
    return (
        f"char8_t not tried: the written type is declared in {Path(declared[0]).name}:"
        f"{declared[1]}, outside the unit; change it there"
    )


def _worse(after: _Build) -> tuple[bool, int, float]:
    """Orders the changes' builds best first: vectorised, then fewer reloads, then
    fewer instructions per element."""
    vectorized = after.remark is not None and after.remark.vectorized
    reloads = len(after.loop.reloads) if after.loop else 0
    return (not vectorized, reloads, after.per_element or 0.0)


def _note(ctx: Context | None, text: str) -> None:
    if ctx is not None:
        ctx.notes.append(text)


def _changes(unit: TranslationUnit, toolchain: Toolchain, match: dict[str, Any]):  # type: ignore[no-untyped-def]
    """(description, unit to build, patched text) for each change worth trying with
    this compiler, best first: char8_t first where the compiler then vectorises (clang,
    GCC at -O3), hoisting first where it stays scalar anyway (GCC -O2); no char8_t
    under -fno-strict-aliasing, where it changes nothing."""
    text = unit.path.read_text()
    include_dir = f"-I{unit.path.parent}"
    found = []
    if unit.is_cxx and toolchain.strict_aliasing and BYTE_TYPES.fullmatch(match["write_type"]):
        flags = [f for f in unit.flags if not f.startswith("-std=")] + [CXX20, include_dir]
        retyped = _retyped(text, unit.path, match.get("write_declared") or [])
        if retyped is not None:
            found.append((CHAR8_T, _like(unit, flags), retyped))
            everywhere = BYTE_TYPES.sub("char8_t", text)
            if everywhere != retyped:  # the type's users (accessors, calls) follow it
                found.append(
                    (f"{CHAR8_T}, every byte type of the file", _like(unit, flags), everywhere)
                )
    hoisted = _hoist(text, match)
    if hoisted is not None:
        reads = ", ".join(f"`{r}`" for r in hoisted[1])
        where = "the store" if match["pattern"] == STRAIGHT_LINE else "the loop"
        change = f"hoist {reads} into locals before {where}"
        found.append((change, _like(unit, [*unit.flags, include_dir]), hoisted[0]))
    if toolchain.family == "gcc" and not toolchain.versions_loops:
        found.reverse()
    yield from found


def _retyped(text: str, path: Path, declared: list) -> str | None:
    """The text with the written byte type made char8_t where it is declared (the
    field, the variable or its typedef: other byte types of the file are left alone);
    None when that declaration is in another file (a header the scratch copy does not
    change). Where the declaration is not known, every byte type of the file."""
    if not declared:
        return BYTE_TYPES.sub("char8_t", text)
    if Path(declared[0]).resolve() != path.resolve():
        return None
    lines = text.splitlines(keepends=True)
    at = int(declared[1]) - 1
    lines[at] = BYTE_TYPES.sub("char8_t", lines[at])
    return "".join(lines)


def _like(unit: TranslationUnit, flags: list[str]) -> TranslationUnit:
    return TranslationUnit(
        unit.path,
        flags,
        unit.flags_origin,
        unit.directory,
        producer=unit.producer,
        compiler=unit.compiler,
    )


def _hoist(text: str, match: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The text with the loop's repeated reads computed once, before the loop: the
    reads as written (`in.size()`), then the data pointer of each container the loop
    indexes (`in[i]` becomes `perfsleuth_data_0[i]`, `in.data()` read before it).
    Straight-line code: its read, once, before the match's first statement."""
    lines = text.splitlines(keepends=True)
    first, last = int(match["line"]) - 1, int(match["end_line"])
    body = "".join(lines[first:last])
    if match["pattern"] == STRAIGHT_LINE:
        keyword = re.search(r"\S", lines[first])
        hoistable = [match["read"]]
    else:
        keyword = re.search(r"\b(for|while|do)\b", lines[first])
        hoistable = match.get("hoistable", [])
    reads = [r for r in hoistable if r in body]
    containers = [c for c in match.get("indexed", []) if _only_indexed(c, body)]
    if keyword is None or not (reads or containers):
        return None
    at = keyword.start()
    head, loop = lines[first][:at], [lines[first][at:], *lines[first + 1 : last]]
    for n, read in enumerate(sorted(reads, key=len, reverse=True)):
        name = f"{HOISTED}_{n}"
        head += f"__typeof__({read}) {name} = {read}; "
        loop = [line.replace(read, name) for line in loop]
    for n, container in enumerate(containers):
        name = f"{DATA_POINTER}_{n}"
        head += f"auto* {name} = {container}.data(); "
        indexed = re.compile(rf"\b{re.escape(container)}\s*\[")
        loop = [indexed.sub(f"{name}[", line) for line in loop]
    lines[first:last] = [head + loop[0], *loop[1:]]
    return "".join(lines), [*reads, *(f"{c}.data()" for c in containers)]


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
    span: tuple[int, int, bool],
) -> _Build:
    """Compile with the user's compiler: GCC's remarks when GCC builds the unit,
    else clang-16's. Straight-line code (span[2]) has no loop: its code's reloads."""
    first, last, straight_line = span
    if toolchain.family == "gcc":
        remarks = gcc_remarks(unit, source, output)
    else:
        remarks, _ = compile_unit(unit, source, output)
    if straight_line:
        code = machine_code.straight_line_code(output, source.name, first, last)
        return _Build(None, code, None, straight_line=True)
    remark = remark_for_loop(remarks, source, first, last)
    vectorized = remark is not None and remark.vectorized
    loop = (
        machine_code.vector_loop(output, source.name, first, last)
        if vectorized
        else machine_code.loop_code(output, source.name, first, last, prefer_reloads=False)
    )
    per_element = None
    if loop is not None:
        shape = VECTOR_SHAPE.search(remark.message) if remark is not None and vectorized else None
        elements = int(shape[1]) * int(shape[2]) if shape else 1
        per_element = len(loop.instructions) / elements
    return _Build(remark, loop, per_element)


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
        "instructions_per_element_before": _round(before.per_element),
        "instructions_per_element_after": _round(after.per_element),
    }
    result["straight_line"] = before.straight_line
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
    the proof's change applied. A UserError when the unit is not inside `cwd`."""
    source = Path(finding.details["match"]["file"]).resolve()
    tree = Path(cwd).resolve()
    if not source.is_relative_to(tree):
        raise build.BuildFailed(
            f"{source} is outside the build's folder {tree}: the changed copy cannot be built"
        )
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-changed-") as tmp:
        copy = Path(tmp) / tree.name
        _copy_tree(tree, copy, root.resolve())
        (copy / source.relative_to(tree)).write_text(proof["patched_text"])
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


def _summary(r: dict[str, Any]) -> str:
    compiler = r["compiler"]
    refused = "".join(f" ({failure})" for failure in r["not_compiled"])
    if r.get("straight_line"):
        return (
            f"{r['change']}: {compiler}'s code loads memory again after the byte stores "
            f"{r['reloads_before']} -> {r['reloads_after']} times{refused}"
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
            f"{r['instructions_per_element_after']:g}"
        )
    return f"{r['change']}: {verdict}{counts}{refused}"
