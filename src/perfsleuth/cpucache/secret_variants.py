"""Do a function's instructions, branches or touched cache lines depend on a
secret? `--variants FILE` runs the command once per line of FILE (the secret goes
where `{secret}` is in the command, else to stdin) and compares the calls of the
traced function across runs, call by call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserError
from .trace import Trace

PLACEHOLDER = "{secret}"


def read_variants(path: str) -> list[str]:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise UserError(f"--variants {path}: cannot read it ({e.strerror})") from e
    variants = [line for line in lines if line.strip()]
    if len(variants) < 2:
        raise UserError(f"--variants {path}: give at least two secrets, one per line")
    return variants


def substitute(cmd: list[str], secret: str) -> tuple[list[str], str | None]:
    """(command, stdin text): the secret replaces {secret}, else it is the input."""
    if any(PLACEHOLDER in arg for arg in cmd):
        return [arg.replace(PLACEHOLDER, secret) for arg in cmd], None
    return cmd, secret + "\n"


def project(traces: list[Trace]) -> dict[str, Any]:
    reference = traces[0]
    differences = [compare(reference, other, index) for index, other in enumerate(traces[1:], 1)]
    found = [d for d in differences if d["differs"]]
    return {
        "function": reference.function,
        "variants": len(traces),
        "constant_time": not found,
        "differences": found,
        "instructions_per_variant": [sum(len(c) for c in t.calls) for t in traces],
    }


def compare(a: Trace, b: Trace, index: int) -> dict[str, Any]:
    shift = a.line_size.bit_length() - 1
    result: dict[str, Any] = {"variant": index, "differs": False}
    if len(a.calls) != len(b.calls):
        result.update(differs=True, what="number of calls", first_source="")
        return result
    for call_index, (x, y) in enumerate(zip(a.calls, b.calls, strict=True)):
        difference = first_difference(x, y, shift, a)
        if difference:
            result.update(differs=True, call=call_index, **difference)
            return result
    return result


def first_difference(x: list, y: list, shift: int, trace: Trace) -> dict[str, Any] | None:
    """The first instruction (branch outcome) or data line where two calls part."""
    code_x = [a for a in x if a[0] == "I"]
    code_y = [a for a in y if a[0] == "I"]
    for i, (p, q) in enumerate(zip(code_x, code_y, strict=False)):
        if p[1] != q[1]:
            branch = code_x[i - 1][1] if i else p[1]
            return {"what": "branch outcome", "first_source": where(trace, branch), "pc": branch}
    if len(code_x) != len(code_y):
        last = code_x[min(len(code_x), len(code_y)) - 1][1]
        return {"what": "instruction count", "first_source": where(trace, last), "pc": last}
    data_x = [a for a in x if a[0] != "I"]
    data_y = [a for a in y if a[0] != "I"]
    for p, q in zip(data_x, data_y, strict=False):
        if p[1] >> shift != q[1] >> shift:
            return {"what": "cache line touched", "first_source": where(trace, p[3]), "pc": p[3]}
    return None


def where(trace: Trace, pc: int) -> str:
    return trace.source_of(pc) or f"{trace.function}+0x{pc - trace.base:x}"
