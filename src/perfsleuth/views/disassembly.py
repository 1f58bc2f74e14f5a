"""The machine code of a function's hot lines, from the run's own binary.

The binary is the one the run recorded (its path and GNU build-id): a file that is
gone, rebuilt since (another build-id) or stripped gives a reason instead of code,
never the instructions of some other build. Each hot line lists its instructions
with their addresses from the binary's line table, in every function it was
inlined into. A run read from perf.data keeps its samples per leaf instruction
(model/leaf_costs.py): each instruction then has its share of the function's self
samples, as perf annotate shows it. Other runs (folded stacks, counting runs,
perf script, runs stored before) have the line's cost only, and say why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..binaries import binary_at, build_id_paths
from ..model.leaf_costs import LeafCosts
from ..model.profile import Profile
from ..static_analysis.machine_code import line_instructions
from ..symbols import dso_name
from .annotate import line_costs

HOT_LINES = 5  # the lines with the most self cost (else total) that get their code shown


@dataclass(frozen=True)
class Binary:
    """Where a function's code is, or why it cannot be read."""

    path: str
    build_id: str
    usable: str = ""  # the file to disassemble, "" when there is none
    reason: str = ""


def hot_line_code(
    profile: Profile,
    function: str,
    dsos: list[dict],
    leaf_costs: LeafCosts | None = None,
    mode: str = "",
) -> dict:
    """The `annotate --asm` / `/api/runs/N/disasm` document of one function."""
    costs = line_costs(profile, function)
    total = profile.total or 1.0
    hot = sorted(
        ((key, cost) for key, cost in costs.items() if key[1] > 0 and (cost[0] or cost[1])),
        key=lambda item: (-item[1][0], -item[1][1], item[0]),
    )[:HOT_LINES]
    binary = function_binary(profile, function, dsos)
    doc: dict = {
        "function": function,
        "binary": binary.path or None,
        "build_id": binary.build_id or None,
        # the file read: the binary itself, or perf's cached copy of the build recorded
        "read_from": binary.usable or None,
        "counts": "instruction" if leaf_costs else "line",
        "no_cost_reason": None if leaf_costs else no_instruction_cost_reason(profile, mode),
        "reason": binary.reason or None,
        "lines": [],
    }
    if not hot and not binary.reason:
        doc["reason"] = f"{function} has no samples on a known source line (no debug info?)"
    if doc["reason"]:
        return doc
    code = _code_of(binary.usable, [key for key, _ in hot])
    by_address = leaf_costs.of_function(function) if leaf_costs else {}
    own = sum(by_address.values()) or 1.0
    doc["function_self"] = sum(by_address.values()) / total if leaf_costs else None
    doc["lines"] = [
        {
            "file": file,
            "line": line,
            "self": cost[0] / total,
            "total": cost[1] / total,
            "instructions": [
                {
                    "address": insn.address,
                    "text": insn.text,
                    "symbol": symbol,
                    # share of the function's self samples at this instruction
                    "share": by_address.get(insn.address, 0.0) / own if leaf_costs else None,
                }
                for symbol, insn in code.get((file, line), [])
            ],
        }
        for (file, line), cost in hot
    ]
    return doc


def no_instruction_cost_reason(profile: Profile, mode: str) -> str:
    """Why a run has no per-instruction cost: what it was read from kept no addresses."""
    meta = profile.meta
    if mode in ("count", "cache"):
        return "a counting run has exact counts per line, not samples per instruction"
    if meta.get("source") != "perf.data":
        source = meta.get("source") or "its input"
        return f"the run was read from {source}, which keeps no sample addresses"
    if meta.get("reader") != "native":
        return "the run was read through perf script, which perfsleuth keeps no addresses from"
    if mode not in ("cpu", ""):
        return f"a run in {mode} mode keeps no sample addresses; cpu mode and a perf.data import do"
    return "the run was stored before perfsleuth kept sample addresses; re-record it"


def _code_of(binary: str, lines: list[tuple[str, int]]) -> dict:
    by_file: dict[str, set[int]] = {}
    for file, line in lines:
        by_file.setdefault(file, set()).add(line)
    out = {}
    for file, numbers in by_file.items():
        for line, code in line_instructions(Path(binary), file, numbers).items():
            out[(file, line)] = code
    return out


def function_binary(profile: Profile, function: str, dsos: list[dict]) -> Binary:
    """The binary the run recorded FUNCTION's code in, checked against its build-id."""
    names = {f.dso for f in profile.frames if f.function == function and f.dso}
    recorded = [d for d in dsos if dso_name(d.get("path", "")) in names]
    if not recorded:
        where = ", ".join(sorted(names)) or "no object file"
        return Binary("", "", reason=f"the run recorded no binary for {function} ({where})")
    path, build_id = recorded[0]["path"], recorded[0].get("build_id", "")
    return check_binary(path, build_id)


def check_binary(path: str, build_id: str) -> Binary:
    """The recorded binary if it is still the one recorded, else a copy with the same
    build-id (perf's ~/.debug cache), else the reason there is no code to show."""
    found = _elf_facts(path)
    if found is not None and (not build_id or found.build_id == build_id):
        return _readable(Binary(path, build_id, usable=path), found)
    for copy in build_id_paths(build_id):
        facts = _elf_facts(copy)
        if facts is not None and facts.has_code:
            return _readable(Binary(path, build_id, usable=copy), facts)
    if found is None:
        return Binary(path, build_id, reason=f"the binary {path} is gone; rebuild it or re-record")
    return Binary(
        path,
        build_id,
        reason=(
            f"the binary {path} changed since the run (build-id {found.build_id or 'none'}, "
            f"the run recorded {build_id}); re-record to see its code"
        ),
    )


@dataclass(frozen=True)
class _ElfFacts:
    build_id: str
    has_code: bool  # .text holds bytes (a separate .debug file has none)
    has_symbols: bool
    has_lines: bool


def _elf_facts(path: str) -> _ElfFacts | None:
    """The file as it is now (binaries reads a file rebuilt while `serve` runs again)."""
    binary = binary_at(path)
    if binary is None:
        return None
    text = binary.section(".text")
    return _ElfFacts(
        binary.build_id,
        text is not None and text.has_bytes,
        binary.section(".symtab") is not None,
        binary.section(".debug_line") is not None,
    )


def _readable(binary: Binary, facts: _ElfFacts) -> Binary:
    if facts.has_symbols and facts.has_lines and facts.has_code:
        return binary
    lacks = "symbols" if not facts.has_symbols else "line table" if facts.has_code else "code"
    return Binary(
        binary.path,
        binary.build_id,
        reason=(
            f"{binary.usable} is stripped (no {lacks}), so its instructions cannot be placed "
            "on source lines; rebuild with -g and keep the symbols"
        ),
    )
