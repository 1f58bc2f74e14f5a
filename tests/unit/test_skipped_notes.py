"""The notes of hot units the source analyses could not compile."""

from __future__ import annotations

from perfsleuth.static_analysis.unit_analysis import PRODUCER_FLAGS, skipped_notes

# brotli built by hand with -Ic/include, which GCC's DW_AT_producer does not record
BROTLI = "(/src/brotli/c/enc/fast_log.h:34:1: error: unknown type name 'BROTLI_INTERNAL')"


def test_units_skipped_for_want_of_the_unrecorded_flags_are_one_note() -> None:
    """brotli's advice had five notes of three lines each, one a unit, all the same."""
    skipped = [
        (name, f"it does not compile {BROTLI}{PRODUCER_FLAGS}")
        for name in ("backward_references.c", "brotli_bit_stream.c", "bit_cost.c")
    ]
    skipped.append(("big.c", "libclang could not parse it"))
    notes = skipped_notes(skipped)
    assert notes[0] == "skipped big.c: libclang could not parse it"
    assert len(notes) == 2
    assert notes[1].startswith(
        "skipped 3 units (backward_references.c, brotli_bit_stream.c, bit_cost.c): they do "
        "not compile (first, backward_references.c: /src/brotli/c/enc/fast_log.h:34:1: error: "
        "unknown type name 'BROTLI_INTERNAL') with the flags their debug info records"
    ), notes[1]
    assert notes[1].endswith("pass --compile-commands FILE (bear, or CMake's "
                             "CMAKE_EXPORT_COMPILE_COMMANDS)")  # fmt: skip


def test_one_unit_keeps_its_own_note() -> None:
    why = f"it does not compile {BROTLI}{PRODUCER_FLAGS}"
    assert skipped_notes([("bzip2.c", why)]) == [f"skipped bzip2.c: {why}"]
