"""The prologue analyzer's lookup of a function's machine code (the rest runs real
programs under valgrind: tests/integration/test_prologue_overhead.py)."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.analyzers.prologue_overhead import function_code
from perfsleuth.binaries.binary import binary_at

STATICS = Path(__file__).resolve().parents[1] / "fixtures" / "statics" / "statics"


def test_one_of_two_same_named_functions_is_found_by_its_address() -> None:
    """A count run names hot.c's and cold.c's static `twin` apart (formats/callgrind.py);
    their code is the symbol holding the function's counted instructions."""
    binary = binary_at(STATICS)
    assert binary is not None
    twins = sorted(s.value for s in binary.symbols(".symtab") if s.name == "twin")
    assert len(twins) == 2
    first = function_code(str(STATICS), "twin (hot.c)", twins[0])
    second = function_code(str(STATICS), "twin (cold.c)", twins[1] + 4)
    assert first is not None and second is not None
    assert (first[0], second[0]) == (twins[0], twins[1])
    assert first[1] != second[1]
    assert function_code(str(STATICS), "twin (hot.c)") is None
