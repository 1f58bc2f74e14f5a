"""Which compiler built a unit, and whether strict aliasing is on: from the compile
database's compiler (asked for --version), the DW_AT_producer, or assumed clang."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.static_analysis.source import TranslationUnit
from perfsleuth.static_analysis.toolchain import toolchain_of

SOURCE = Path("unit.cc")


def unit(flags: list[str], producer: str = "", compiler: str = "") -> TranslationUnit:
    return TranslationUnit(SOURCE, flags, "test", producer=producer, compiler=compiler)


def test_gcc_is_told_from_its_producer_string() -> None:
    gcc = toolchain_of(unit(["-O2"], "GNU C++20 12.2.0 -mtune=generic -march=x86-64 -g -O2"))
    assert (gcc.family, gcc.major, gcc.origin) == ("gcc", "12", "DW_AT_producer")
    assert gcc.name == "GCC 12" and gcc.strict_aliasing and not gcc.versions_loops
    clang = toolchain_of(unit(["-O2"], "Debian clang version 16.0.6 (15)"))
    assert (clang.family, clang.major) == ("clang", "16") and clang.versions_loops


def test_the_compile_database_compiler_wins_over_the_producer() -> None:
    found = toolchain_of(unit(["-O3"], "Debian clang version 16.0.6", compiler="g++-12"))
    assert (found.family, found.major, found.origin) == ("gcc", "12", "compile_commands.json")
    assert found.versions_loops  # -O3 lets GCC version a loop for an alias check


def test_an_unknown_compiler_is_clang_assumed() -> None:
    found = toolchain_of(unit(["-O2"]))
    assert (found.family, found.origin) == ("clang", "assumed")


def test_strict_aliasing_follows_the_flags_and_gcc_levels() -> None:
    assert not toolchain_of(unit(["-O2", "-fno-strict-aliasing"], "GNU C11 12.2.0")).strict_aliasing
    assert toolchain_of(unit(["-O2", "-fno-strict-aliasing", "-fstrict-aliasing"])).strict_aliasing
    assert not toolchain_of(unit(["-O1"], "GNU C11 12.2.0 -O1")).strict_aliasing  # GCC: -O2 on
    assert toolchain_of(unit(["-O1"], "Debian clang version 16.0.6")).strict_aliasing
    assert toolchain_of(unit([], "GNU C11 12.2.0")).opt_level == "-O0"
