"""Pick perf's call-graph mode for a binary: frame pointers when it keeps them, else DWARF.

Frame-pointer unwinding is cheap and exact when every function that calls another
sets up %rbp, and garbage when the compiler omitted it (the default at -O1 and
above). We look at the machine code of the binary's functions rather than asking
the user.

Only functions that call something matter: a leaf without a frame costs one lost
caller at most, and compilers skip the frame in leaves even with
-fno-omit-frame-pointer. Mixed binaries are common (a Rust program links a
standard library built with frame pointers into code built without), so a binary
counts as frame-pointer-safe only when all its calling functions set one up.

The same holds for the libraries it loads (DT_NEEDED): Debian builds libc and
libstdc++ without frame pointers, so a frame-pointer walk through qsort, printf or
std::regex loses the user's caller, the line the advisor names. Frame pointers are
chosen only when the executable and every library it needs keep them; the choice
and its reason are kept in the run's facts (meta `call_graph`, `call_graph_reason`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..binaries import STT_FUNC, Binary, binary_at
from ..binaries.libraries import needed_paths

# The scheduler may move `push %rbp; mov %rsp,%rbp` a few instructions into the
# function, so we look for both within its first instructions.
PROLOGUE_INSTRUCTIONS = 8
FP_SHARE_THRESHOLD = 0.99  # one frameless caller on the hot path breaks every stack through it
MAX_FUNCTIONS = 2000
MIN_FUNCTION_SIZE = 16
MAX_FUNCTION_BYTES = 4096
# C runtime start-up code: never built with a frame, whatever the user's flags.
CRT_FUNCTIONS = frozenset(
    {
        "_start",
        "_init",
        "_fini",
        "deregister_tm_clones",
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "__libc_csu_init",
        "__libc_csu_fini",
    }
)


def resolve_executable(name: str) -> Path | None:
    """The file a command name runs, as the shell would find it."""
    if "/" in name:
        path = Path(name)
        return path if path.is_file() else None
    found = shutil.which(name)
    return Path(found) if found else None


def frame_pointer_share(path: Path) -> float | None:
    """Share of the calling functions whose prologue sets up a frame pointer.

    None when the file is not an x86-64 ELF with functions we can read.
    """
    binary = binary_at(path)
    text = binary.section(".text") if binary and binary.is_x86_64 else None
    if binary is None or text is None:
        return None
    return _share(_function_ranges(binary), text.addr, binary.data(text))


def _share(functions: list[tuple[int, int]], base: int, text: bytes) -> float | None:
    # Imported here: capstone costs 13 MB of RSS, which the always-on agent
    # (collect.system_wide, through collect.perf) must not pay for nothing.
    import capstone

    disasm = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    calling = with_fp = 0
    for addr, size in functions:
        body = text[addr - base : addr - base + min(size, MAX_FUNCTION_BYTES)]
        if addr < base or not body:
            continue
        code = [(m, o) for _a, _s, m, o in disasm.disasm_lite(body, addr)]
        if not any(m == "call" for m, _o in code):
            continue
        calling += 1
        head = code[:PROLOGUE_INSTRUCTIONS]
        with_fp += ("push", "rbp") in head and ("mov", "rbp, rsp") in head
    return with_fp / calling if calling else None


def _function_ranges(binary: Binary) -> list[tuple[int, int]]:
    """(start, size) of sizeable functions, an even sample of at most MAX_FUNCTIONS."""
    found: dict[int, int] = {}
    for name in (".symtab", ".dynsym"):
        for sym in binary.symbols(name, frozenset({STT_FUNC})):
            if sym.size >= MIN_FUNCTION_SIZE and sym.value and sym.name not in CRT_FUNCTIONS:
                found[sym.value] = sym.size
    ranges = sorted(found.items())
    step = max(1, len(ranges) // MAX_FUNCTIONS)
    return ranges[::step]


@dataclass(frozen=True)
class Choice:
    """perf's call-graph mode for a recording, and why."""

    mode: str  # "fp" | "dwarf"
    reason: str


def choose(cmd0: str | None, requested: str) -> str:
    """'fp' or 'dwarf' for `--call-graph auto|fp|dwarf`."""
    return decide(cmd0, requested).mode


def decide(cmd0: str | None, requested: str) -> Choice:
    """The mode for `--call-graph auto|fp|dwarf` on the program CMD0 runs, with its reason."""
    if requested != "auto":
        return Choice(requested, f"--call-graph {requested} asked for")
    path = resolve_executable(cmd0) if cmd0 else None
    share = frame_pointer_share(path) if path else None
    if path is None:
        return Choice("dwarf", f"{cmd0 or 'the program'} is not a file found here")
    if share is None:
        binary = binary_at(path)
        if binary is None or not binary.is_x86_64:
            return Choice("dwarf", f"{cmd0} is not an x86-64 ELF file")
        return Choice("dwarf", f"{path.name} has no function symbols to check for frame pointers")
    if share < FP_SHARE_THRESHOLD:
        return Choice("dwarf", _without_fp(path.name, share))
    binary = binary_at(path)
    for library in needed_paths(binary) if binary else []:
        lib_share = frame_pointer_share(library)
        if lib_share is not None and lib_share < FP_SHARE_THRESHOLD:
            needs = f", and {path.name} needs it"
            return Choice("dwarf", _without_fp(library.name, lib_share) + needs)
    return Choice("fp", f"{path.name} and the libraries it needs keep frame pointers")


def _without_fp(name: str, share: float) -> str:
    return (
        f"{name} keeps no frame pointers in every calling function ({100 * share:.0f}% set one up)"
    )
