"""Which of an aliasing match's fixes work with the compiler that builds it, in the
order worth trying, and the share of the loop's time they are expected to save.

The source patterns (aliasing_patterns.py) list every fix in the abstract: char8_t,
hoisting the repeated read, `__restrict`. What each does depends on the compiler:
- -fno-strict-aliasing: every store may alias, char8_t as much as char: it is moot,
  and only reads computed once before the loop (locals) help;
- GCC at -O2 does not vectorise with a runtime alias check ("very cheap" cost model):
  char8_t removes the reloads, but the loop usually stays scalar (the ExpandHRP shape
  went 1.56x faster, where clang vectorises it, 2.6-12x); and a `__restrict` local
  made GCC's SwapBase64-shaped loop slower (0.80-0.93x), so it is not proposed;
- clang vectorises once the type no longer aliases: char8_t first.
A loop that maps bytes through a switch (bitcoin's SwapBase64) stays scalar with any
of those (the switch); computed without branches in blocks into a local array
(byte_map.py) both compilers vectorise it, with or without strict aliasing: that
fix comes first (swap64.cc: GCC 12 -O2 5.6x, clang 16 9.5x, where the hoist gave
1.03x and 0.90x).
"""

from __future__ import annotations

from .aliasing_patterns import AliasMatch
from .byte_map import FIX
from .toolchain import Toolchain

# Expected fraction of a loop's time a fix saves (1 - 1/speed-up), by what the
# compiler can then do: vectorise (clang: 2.6-12x in the study, 0.6 kept), only drop
# the reloads (GCC -O2 1.56x; a branchy loop ~1.3x), or a load or two per call.
SAVING = {"vectorizes": 0.6, "scalar": 0.3, "branches": 0.2, "straight-line": 0.05}


def fixes_for(match: AliasMatch, toolchain: Toolchain) -> list[str]:
    """The match's fixes that work with this compiler, best first."""
    blocks = [FIX] if match.byte_map else []
    char8 = [f for f in match.fixes if "char8_t" in f and f not in blocks]
    restrict = [f for f in match.fixes if "__restrict" in f]
    locals_ = [f for f in match.fixes if f not in char8 and f not in restrict and f not in blocks]
    return [*blocks, *_by_compiler(char8, restrict, locals_, toolchain)]


def _by_compiler(
    char8: list[str], restrict: list[str], locals_: list[str], toolchain: Toolchain
) -> list[str]:
    if not toolchain.strict_aliasing:
        return [
            *locals_,
            f"(char8_t or __restrict would change nothing: {toolchain.name} builds this "
            "unit with -fno-strict-aliasing, where every store may alias)",
        ]
    if toolchain.family == "gcc":
        if toolchain.versions_loops:
            return [*char8, *locals_]
        qualified = [
            f"{f}: removes the reloads, but {toolchain.name} {toolchain.opt_level} still "
            "needs a runtime alias check to vectorise, which it does not add at this level"
            for f in char8
        ]
        return [*locals_, *qualified]
    return [*char8, *locals_, *restrict]


def saving_for(match: AliasMatch, toolchain: Toolchain) -> float:
    """Expected fraction of the matched code's time the best fix saves with this compiler."""
    if match.pattern == "straight-line":
        return SAVING["straight-line"]
    if match.byte_map:
        return SAVING["vectorizes"]
    if match.branches:
        return SAVING["branches"]
    scalar = toolchain.family == "gcc" and not toolchain.versions_loops
    return SAVING["scalar" if scalar or not toolchain.strict_aliasing else "vectorizes"]
