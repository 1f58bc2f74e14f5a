"""Pick perf's call-graph mode for a binary: frame pointers when it keeps them, else DWARF.

Frame-pointer unwinding is cheap and exact when every function sets up %rbp, and
garbage when the compiler omitted it (the default at -O1 and above). We look at
the prologues of the binary's functions rather than asking the user.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

# mov %rsp,%rbp in its two encodings. The scheduler may move it a few
# instructions away from the `push %rbp`, so we look within a window.
FP_SETUP = (bytes.fromhex("4889e5"), bytes.fromhex("488bec"))
PROLOGUE_WINDOW = 32
# Leaf functions may skip the frame even with -fno-omit-frame-pointer, so a
# binary built with frame pointers shows them in a share of functions, not all.
FP_SHARE_THRESHOLD = 0.3
MAX_FUNCTIONS = 400
MIN_FUNCTION_SIZE = 16


def resolve_executable(name: str) -> Path | None:
    """The file a command name runs, as the shell would find it."""
    if "/" in name:
        path = Path(name)
        return path if path.is_file() else None
    found = shutil.which(name)
    return Path(found) if found else None


def frame_pointer_share(path: Path) -> float | None:
    """Share of sizeable functions whose prologue sets up a frame pointer.

    None when the file is not an ELF with a symbol table we can read.
    """
    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            if elf["e_machine"] != "EM_X86_64":
                return None
            functions = _function_starts(elf)
            if not functions:
                return None
            text = elf.get_section_by_name(".text")
            if text is None:
                return None
            lo, data = text["sh_addr"], text.data()
            with_fp = sum(1 for addr in functions if _has_fp_prologue(data, addr - lo))
            return with_fp / len(functions)
    except (OSError, ELFError):
        return None


def _function_starts(elf: ELFFile) -> list[int]:
    starts: set[int] = set()
    for name in (".symtab", ".dynsym"):
        section = elf.get_section_by_name(name)
        if not isinstance(section, SymbolTableSection):
            continue
        for sym in section.iter_symbols():
            if (
                sym["st_info"]["type"] == "STT_FUNC"
                and sym["st_size"] >= MIN_FUNCTION_SIZE
                and sym["st_value"]
            ):
                starts.add(sym["st_value"])
    return sorted(starts)[:MAX_FUNCTIONS]


def _has_fp_prologue(text: bytes, offset: int) -> bool:
    if offset < 0 or offset >= len(text):
        return False
    head = text[offset : offset + PROLOGUE_WINDOW]
    return head[:8].find(b"\x55") >= 0 and any(p in head for p in FP_SETUP)


def choose(cmd0: str | None, requested: str) -> str:
    """'fp' or 'dwarf' for `--call-graph auto|fp|dwarf`."""
    if requested != "auto":
        return requested
    path = resolve_executable(cmd0) if cmd0 else None
    share = frame_pointer_share(path) if path else None
    return "fp" if share is not None and share >= FP_SHARE_THRESHOLD else "dwarf"
