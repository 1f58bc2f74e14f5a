"""clang_flags: the options clang-16's own driver refuses are dropped, nothing else."""

from __future__ import annotations

from perfsleuth.static_analysis.clang_flags import clang_accepted

GCC_BUILD = ["-DX=1", "-Iinclude", "-O2", "-fno-extended-identifiers", "-fstack-reuse=none"]
GCC_BUILD += ["-Wlogical-op", "-fstack-clash-protection", "-std=c++20"]


def test_the_options_only_gcc_has_are_dropped_and_the_rest_kept_in_order() -> None:
    kept = clang_accepted(GCC_BUILD, cxx=True)
    assert kept == ["-DX=1", "-Iinclude", "-O2", "-Wlogical-op", "-fstack-clash-protection",
                    "-std=c++20"]  # fmt: skip


def test_flags_clang_takes_are_left_alone() -> None:
    flags = ["-O3", "-march=x86-64-v2", "-fno-strict-aliasing", "-g"]
    assert clang_accepted(flags, cxx=False) == flags


def test_every_form_of_the_driver_s_refusal_is_read() -> None:
    """ "unknown argument 'X'; did you mean 'Y'?" has no colon; "unsupported argument '8'
    to option '-flto='" names the flag in two parts."""
    flags = ["-O2", "-flto=8", "-fno-extended-identifiersx", "-g"]
    assert clang_accepted(flags, cxx=False) == ["-O2", "-g"]
