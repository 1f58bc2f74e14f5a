"""Do a function's instructions, branches or touched cache lines depend on a
secret? `--variants FILE` runs the command once per line of FILE (the secret goes
where `{secret}` is in the command, else to stdin) and compares the calls of the
traced function across runs, call by call."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..model.cpu_cache import ConstantTime, Difference
from .trace import Trace

PLACEHOLDER = "{secret}"
# pads the shorter command lines: argv's strings sit at the top of the stack
PAD_VARIABLE = "PERFSLEUTH_SECRET_PAD"
MAX_VARIANTS = 64  # each is a whole run of the program under valgrind


def read_variants(path: str) -> list[str]:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise UserError(f"--variants {path}: cannot read it ({e.strerror})") from e
    variants = [line for line in lines if line.strip()]
    if len(variants) < 2:
        raise UserError(f"--variants {path}: give at least two secrets, one per line")
    if len(variants) > MAX_VARIANTS:
        raise UserError(
            f"--variants {path}: {len(variants):,} secrets; give at most {MAX_VARIANTS} "
            "(one run each)"
        )
    return variants


def substitute(cmd: list[str], secret: str) -> tuple[list[str], str | None]:
    """(command, stdin text): the secret replaces {secret}, else it is the input."""
    if any(PLACEHOLDER in arg for arg in cmd):
        return [arg.replace(PLACEHOLDER, secret) for arg in cmd], None
    return cmd, secret + "\n"


def runs(cmd: list[str], variants: list[str]) -> list[tuple[list[str], str | None, dict[str, str]]]:
    """Each secret's (command, stdin text, environment added). The kernel copies argv's
    strings, then the environment's, to the top of the stack: a longer secret on the
    command line would move the whole stack (and argv) to other cache lines, a
    difference no code of the function makes. A variable of the missing length in
    the environment keeps every run's stack where the longest secret's is."""
    substituted = [substitute(cmd, secret) for secret in variants]
    sizes = [sum(len(arg.encode()) + 1 for arg in args) for args, _ in substituted]
    return [
        (args, text, {PAD_VARIABLE: "x" * (max(sizes) - size)})
        for (args, text), size in zip(substituted, sizes, strict=True)
    ]


def project(traces: list[Trace]) -> ConstantTime:
    reference = traces[0]
    found = [
        difference
        for index, other in enumerate(traces[1:], 1)
        if (difference := compare(reference, other, index)) is not None
    ]
    return {
        "function": reference.function,
        "variants": len(traces),
        "constant_time": not found,
        "differences": found,
        "instructions_per_variant": [sum(len(c) for c in t.calls) for t in traces],
    }


def compare(a: Trace, b: Trace, index: int) -> Difference | None:
    """Where the calls of variant `index` first part from the reference's, if they do."""
    if len(a.calls) != len(b.calls):
        what = f"number of calls ({len(a.calls):,} with #1, {len(b.calls):,} with #{index + 1})"
        return {"variant": index, "differs": True, "what": what, "first_source": ""}
    shift = a.line_size.bit_length() - 1
    for call_index, (x, y) in enumerate(zip(a.calls, b.calls, strict=True)):
        parting = first_difference(x, y, shift)
        if parting is not None:
            what, pc = parting
            return {
                "variant": index,
                "differs": True,
                "call": call_index,
                "what": what,
                "first_source": where(a, pc),
                "pc": pc,
            }
    return None


def first_difference(x: list, y: list, shift: int) -> tuple[str, int] | None:
    """What first differs between two calls (branch outcome, instruction count or data
    line touched), and at which pc."""
    code_x = [a for a in x if a[0] == "I"]
    code_y = [a for a in y if a[0] == "I"]
    for i, (p, q) in enumerate(zip(code_x, code_y, strict=False)):
        if p[1] != q[1]:
            return "branch outcome", code_x[i - 1][1] if i else p[1]
    if len(code_x) != len(code_y):
        return "instruction count", code_x[min(len(code_x), len(code_y)) - 1][1]
    data_x = [a for a in x if a[0] != "I"]
    data_y = [a for a in y if a[0] != "I"]
    for p, q in zip(data_x, data_y, strict=False):
        if p[1] >> shift != q[1] >> shift:
            return "cache line touched", p[3]
    return None


def where(trace: Trace, pc: int) -> str:
    return trace.source_of(pc) or f"{trace.function}+0x{pc - trace.base:x}"
