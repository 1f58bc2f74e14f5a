"""Build flags: the -O level a compiler recorded in DW_AT_producer."""

from __future__ import annotations

import pytest

from perfsleuth.analyzers.build_flags import optimization_level


@pytest.mark.parametrize(
    ("producer", "level"),
    [
        ("GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O0 -fasynchronous-unwind-tables", "0"),
        ("GNU C++20 12.2.0 -mtune=generic -march=x86-64 -g -O2 -std=c++20", "2"),
        ("GNU C17 12.2.0 -mtune=generic -march=x86-64 -g", "0"),  # GCC without -O: -O0
        ("GNU C17 12.2.0 -O3 -g -Og", "g"),  # the last -O wins
        ("GNU C17 12.2.0 -O -g", "1"),
        ("Debian clang version 16.0.6 (15~deb12u1)", None),  # clang does not say
        ("clang version 16.0.6 -O2 -g", "2"),  # -grecord-command-line
    ],
)
def test_optimization_level(producer: str, level: str | None) -> None:
    assert optimization_level(producer) == level
