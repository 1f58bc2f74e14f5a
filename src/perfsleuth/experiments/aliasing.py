"""`advise --verify` for aliasing-write findings: apply the fix to a scratch copy of
the translation unit, recompile it, and compare clang's verdict and the loop's
machine code before and after. The user's files are only read.

The changes tried, in order, until one compiles: the written byte type becomes
char8_t (C++ only; the unit is then built as C++20), then the repeated read is
hoisted into a local before the loop (`__typeof__(read) perfsleuth_hoisted = read;`).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analyzers import Context
from ..model.findings import Finding
from ..static_analysis import machine_code
from ..static_analysis.compiler_remarks import CompileError, Remark, compile_unit, remark_for_loop
from ..static_analysis.source import TranslationUnit

BYTE_TYPES = re.compile(
    r"\b(?:std::)?u?int8_t\b|\bunsigned\s+char\b|\bsigned\s+char\b|\bstd::byte\b"
)
VECTOR_SHAPE = re.compile(r"vectorization width: (\d+), interleaved count: (\d+)")
HOISTED = "perfsleuth_hoisted"
CXX20 = "-std=c++20"


@dataclass
class _Build:
    remark: Remark | None
    loop: machine_code.LoopCode | None
    per_element: float | None  # loop instructions per source iteration


def verify_aliasing(finding: Finding, ctx: Context | None = None) -> dict[str, Any] | None:
    """The compile-time proof of an aliasing-write finding, or None when the finding
    carries no translation unit or no change could be applied (reason in ctx.notes)."""
    match = finding.details.get("match")
    if not match or match["pattern"] == "straight-line":
        return None
    source = Path(match["file"])
    if not source.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="perfsleuth-verify-") as tmp:
        try:
            return _compare(_unit_of(finding, source), match, Path(tmp), ctx, finding.rule)
        except CompileError as exc:
            _note(ctx, f"{finding.rule} not verified: the unit does not compile ({exc})")
            return None


def _unit_of(finding: Finding, source: Path) -> TranslationUnit:
    """The unit as the finding's analysis built it."""
    return TranslationUnit(
        source,
        list(finding.details.get("flags", [])),
        finding.details.get("flags_origin", "defaults"),
        Path(finding.details["directory"]) if finding.details.get("directory") else None,
    )


def _compare(
    unit: TranslationUnit, match: dict[str, Any], scratch: Path, ctx: Context | None, rule: str
) -> dict[str, Any] | None:
    """Build the unit, then each change in turn until one compiles, and compare."""
    span = (int(match["line"]), int(match["end_line"]))
    before = _build(unit, unit.path, scratch / "before.o", span)
    for change, patched_unit, text in _changes(unit, unit.path, match):
        copy = scratch / "patched" / unit.path.name
        copy.parent.mkdir(exist_ok=True)
        copy.write_text(text)
        try:
            after = _build(patched_unit, copy, scratch / "after.o", span)
        except CompileError:
            continue
        return _result(change, before, after)
    _note(ctx, f"{rule} not verified: no suggested change compiled in a scratch copy")
    return None


def _note(ctx: Context | None, text: str) -> None:
    if ctx is not None:
        ctx.notes.append(text)


def _changes(unit: TranslationUnit, source: Path, match: dict[str, Any]):  # type: ignore[no-untyped-def]
    """(description, unit to build, patched text) for each change worth trying."""
    text = source.read_text()
    include_dir = f"-I{source.parent}"
    if unit.is_cxx and BYTE_TYPES.search(text):
        flags = [f for f in unit.flags if not f.startswith("-std=")] + [CXX20, include_dir]
        patched = TranslationUnit(source, flags, unit.flags_origin, unit.directory)
        yield ("write through char8_t", patched, BYTE_TYPES.sub("char8_t", text))
    hoisted = _hoist(text, match)
    if hoisted is not None:
        patched = TranslationUnit(
            source, [*unit.flags, include_dir], unit.flags_origin, unit.directory
        )
        reads = ", ".join(f"`{r}`" for r in match["hoistable"])
        yield (f"hoist {reads} into locals before the loop", patched, hoisted)


def _hoist(text: str, match: dict[str, Any]) -> str | None:
    """The text with the loop's repeated reads computed once, before the loop."""
    lines = text.splitlines(keepends=True)
    first, last = int(match["line"]) - 1, int(match["end_line"])
    keyword = re.search(r"\b(for|while|do)\b", lines[first])
    reads = [r for r in match.get("hoistable", []) if r in "".join(lines[first:last])]
    if keyword is None or not reads:
        return None
    at = keyword.start()
    head, loop = lines[first][:at], [lines[first][at:], *lines[first + 1 : last]]
    for n, read in enumerate(sorted(reads, key=len, reverse=True)):
        name = f"{HOISTED}_{n}"
        head += f"__typeof__({read}) {name} = {read}; "
        loop = [line.replace(read, name) for line in loop]
    lines[first:last] = [head + loop[0], *loop[1:]]
    return "".join(lines)


def _build(unit: TranslationUnit, source: Path, output: Path, span: tuple[int, int]) -> _Build:
    remarks, _ = compile_unit(unit, source, output)
    remark = remark_for_loop(remarks, source, *span)
    vectorized = remark is not None and remark.vectorized
    loop = (
        machine_code.vector_loop(output, source.name, *span)
        if vectorized
        else machine_code.loop_code(output, source.name, *span)
    )
    per_element = None
    if loop is not None:
        shape = VECTOR_SHAPE.search(remark.message) if remark is not None and vectorized else None
        elements = int(shape[1]) * int(shape[2]) if shape else 1
        per_element = len(loop.instructions) / elements
    return _Build(remark, loop, per_element)


def _result(change: str, before: _Build, after: _Build) -> dict[str, Any]:
    was = before.remark is not None and before.remark.vectorized
    now = after.remark is not None and after.remark.vectorized
    result: dict[str, Any] = {
        "method": "recompiled a scratch copy with clang-16",
        "change": change,
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
    result["loop_removed"] = after.remark is None and after.loop is None
    result["summary"] = _summary(result)
    return result


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _summary(r: dict[str, Any]) -> str:
    verdict = (
        "clang no longer emits the loop (it became a library call such as memset, or vanished)"
        if r["loop_removed"]
        else "the loop is now vectorized"
        if r["vectorized_after"] and not r["vectorized_before"]
        else "clang still does not vectorize the loop"
        if not r["vectorized_after"]
        else "the loop was already vectorized"
    )
    counts = ""
    if r["instructions_per_element_before"] and r["instructions_per_element_after"]:
        counts = (
            f"; loop instructions per element {r['instructions_per_element_before']:g} -> "
            f"{r['instructions_per_element_after']:g}"
        )
    return f"{r['change']}: {verdict}{counts}"
