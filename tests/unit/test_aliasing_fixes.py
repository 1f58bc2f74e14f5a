"""The fixes an aliasing match gets follow the compiler that builds it: char8_t first
with clang, hoisting first (and no __restrict) with GCC -O2, no char8_t at all under
-fno-strict-aliasing; and the expected saving with them."""

from __future__ import annotations

from perfsleuth.static_analysis.aliasing_fixes import SAVING, fixes_for, saving_for
from perfsleuth.static_analysis.aliasing_patterns import AliasMatch
from perfsleuth.static_analysis.byte_map import FIX
from perfsleuth.static_analysis.toolchain import Toolchain

FIXES = [
    "write through char8_t instead of uint8_t (std::vector<char8_t>): char8_t does not alias",
    "hoist `s.size()` into a local before the loop",
    "or mark the written pointer __restrict",
]
CLANG = Toolchain("clang", "16", "assumed", "-O2", True)
GCC_O2 = Toolchain("gcc", "12", "DW_AT_producer", "-O2", True)
GCC_O3 = Toolchain("gcc", "12", "DW_AT_producer", "-O3", True)
NO_STRICT = Toolchain("gcc", "12", "compile_commands.json", "-O2", False)


def match(branches: bool = False, pattern: str = "loop-condition") -> AliasMatch:
    return AliasMatch(
        pattern, "f", "f.cc", 3, 5, "s.size()", 3, "v[i] = 1", 4, "uint8_t", 0.85, branches, FIXES
    )


def test_clang_gets_char8_t_first_and_keeps_restrict() -> None:
    assert fixes_for(match(), CLANG) == FIXES


def test_gcc_at_o2_gets_hoisting_first_and_no_restrict() -> None:
    fixes = fixes_for(match(), GCC_O2)
    assert fixes[0] == FIXES[1]
    assert "char8_t" in fixes[1] and "runtime alias check" in fixes[1]
    assert not any("__restrict" in fix for fix in fixes)


def test_gcc_at_o3_vectorises_with_char8_t() -> None:
    assert fixes_for(match(), GCC_O3) == FIXES[:2]


def test_without_strict_aliasing_char8_t_is_moot() -> None:
    fixes = fixes_for(match(), NO_STRICT)
    assert fixes[0] == FIXES[1]
    assert "-fno-strict-aliasing" in fixes[1] and "would change nothing" in fixes[1]
    assert not any(fix.startswith("write through char8_t") for fix in fixes)


def test_the_saving_follows_what_the_compiler_can_then_do() -> None:
    assert saving_for(match(), CLANG) == SAVING["vectorizes"]
    assert saving_for(match(), GCC_O2) == SAVING["scalar"] < SAVING["vectorizes"]
    assert saving_for(match(), NO_STRICT) == SAVING["scalar"]
    assert saving_for(match(branches=True), CLANG) == SAVING["branches"]
    assert saving_for(match(pattern="straight-line"), GCC_O2) == SAVING["straight-line"]


def test_a_byte_map_through_a_switch_gets_the_block_rewrite_first_with_every_compiler() -> None:
    """SwapBase64's shape: hoisting and char8_t leave the switch's loop scalar; the
    branch-free block rewrite vectorises with both compilers, strict aliasing or not."""
    byte_map = match(branches=True)
    byte_map.byte_map = True
    byte_map.fixes = [FIX, *FIXES]
    for toolchain in (CLANG, GCC_O2, GCC_O3, NO_STRICT):
        fixes = fixes_for(byte_map, toolchain)
        assert fixes[0] == FIX and fixes.count(FIX) == 1
        assert fixes[1:] == fixes_for(match(branches=True), toolchain)
        assert saving_for(byte_map, toolchain) == SAVING["vectorizes"]
