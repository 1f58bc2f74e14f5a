"""The prologue analyzer's lookup of a function's machine code (the rest runs real
programs under valgrind: tests/integration/test_prologue_overhead.py)."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.analyzers import prologue_overhead
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


def test_a_bare_name_of_two_functions_is_the_one_holding_the_counted_code() -> None:
    """A name of which one function ran keeps its bare name (gawk's copies of awk.h's
    static force_string_fmt, one ran): its code is the symbol holding the counted
    instructions, not the first symbol of the name (hot.c's `twin` for cold.c's)."""
    binary = binary_at(STATICS)
    assert binary is not None
    twins = sorted(s.value for s in binary.symbols(".symtab") if s.name == "twin")
    found = function_code(str(STATICS), "twin", twins[1] + 4)
    assert found is not None and found[0] == twins[1]
    found = function_code(str(STATICS), "twin", twins[0])
    assert found is not None and found[0] == twins[0]


def test_a_static_function_is_said_to_be_static() -> None:
    """A static function is called from its own compile unit only, whatever file the
    calling lines are in (gawk's cmp_scalars, static in eval.c, called from interpret.h,
    which eval.c includes), so the compiler may inline what a split keeps."""
    binary = binary_at(STATICS)
    assert binary is not None
    at = {s.name: s.value for s in binary.symbols(".symtab") if s.name in ("twin", "hot_run")}
    assert prologue_overhead.is_static(str(STATICS), at["twin"])
    assert not prologue_overhead.is_static(str(STATICS), at["hot_run"])


def test_the_estimate_says_what_it_leaves_out_when_the_fast_path_may_be_inlined() -> None:
    """m4's peek_input (static) was estimated to save 8,337,851 instructions and its split
    saved 29,114,600, GCC inlining the kept fast path into its callers; gawk's is_integer,
    called from other files only, 2,200,767 and 2,539,637. The finding said neither."""
    note, ratio = prologue_overhead.inlining_note("peek_input", "src/input.c", True, {})
    assert "may inline" in note and "leaves out" in note
    assert ratio * 8_337_851 >= 29_114_600
    note, ratio = prologue_overhead.inlining_note(
        "keys_equal", "/x/keys.c", False, {"/x/keys.c": 30, "/x/other.c": 70}
    )
    assert note.startswith("30% of its calls come from its own file (keys.c)")
    note, ratio = prologue_overhead.inlining_note(
        "is_integer", "int_array.c", False, {"/g/cint_array.c": 9, "/g/array.c": 1}
    )
    assert "other files (array.c, cint_array.c)" in note and "stays a call" in note
    assert 2_200_767 * ratio >= 2_539_637 and ratio < 1.5


def test_calls_from_another_file_of_the_same_compile_unit_may_be_inlined() -> None:
    """mujs builds its library as one unit (one.c includes every .c file): its
    jsV_toobject, in jsvalue.c, is called from jsrun.c. The finding said "its calls come
    from other files (jsrun.c): what the split keeps stays a call" and put the saving at
    1.9-2.2% of the run (11,023,032 instructions); the split saved 14,413,219 (2.45%), GCC
    inlining the kept fast path into every caller. The calls are told apart by the
    compile unit of each caller's code (DWARF's .debug_aranges), not by file name."""
    unity = STATICS.parents[1] / "unity"
    for build, same_unit in (("unity", True), ("units", False)):
        binary = binary_at(unity / build)
        assert binary is not None
        at = {s.name: s.value for s in binary.symbols(".symtab") if s.name in ("to_object", "main")}
        calls, unit = prologue_overhead.unit_calls(
            str(unity / build), at["to_object"], {at["main"]: 100000}
        )
        assert (calls, unit) == ((100000, "one.c") if same_unit else (0, "value.c"))
    note, ratio = prologue_overhead.inlining_note(
        "jsV_toobject", "jsvalue.c", False, {"/m/jsrun.c": 918592}, (918592, "one.c")
    )
    assert note.startswith("all of its calls come from its own compile unit (one.c)")
    assert "may inline" in note
    assert 11_023_032 * ratio >= 14_413_219
