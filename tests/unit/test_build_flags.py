"""Build flags: the -O level a compiler recorded in DW_AT_producer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.analyzers.build_flags import (
    compile_units,
    cross_unit_calls,
    entry_addresses,
    hot_code_shape,
    hottest_first,
    into,
    optimization_level,
)
from perfsleuth.model.profile import Frame, ProfileBuilder


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


LZ4HC = "/src/lz4/lib/lz4hc.c"
LZ4 = "/src/lz4/lib/lz4.c"


def test_a_call_inside_a_unit_that_includes_another_units_source_crosses_no_unit() -> None:
    """lz4's count run (gcc -O2): lz4hc.c includes lz4.c, so LZ4HC_countPattern's lines
    are lz4hc.c's and, for the lz4.c helpers inlined into it, lz4.c's. Its call from
    lz4hc.c was "LZ4HC_compress_generic_noDictCtx.part.0 (lz4hc.c) -> LZ4HC_countPattern
    (lz4.c)", a call between compile units LTO could inline; a real one still is."""
    compress = Frame("LZ4HC_compress_generic_noDictCtx.part.0", "lz4", LZ4HC, 1006)
    builder = ProfileBuilder(unit="instructions")
    for frames, weight in [
        ([Frame("LZ4HC_countPattern", "lz4", LZ4HC, 825), compress], 7_078_670),
        ([Frame("LZ4HC_countPattern", "lz4", LZ4, 395), compress], 1_415_734),
        ([Frame("LZ4HC_compress_generic_noDictCtx.part.0", "lz4", LZ4, 394)], 19_893_637),
        ([Frame("LZ4HC_compress_generic_noDictCtx.part.0", "lz4", LZ4HC, 1420)], 223_809_391),
        ([Frame("LZ4_compress_fast", "lz4", LZ4, 1500), Frame("main", "lz4", "/src/m.c", 9)], 5),
    ]:
        builder.add(frames, weight)
    calls = cross_unit_calls(builder.build(), "lz4", {LZ4HC, LZ4, "/src/m.c"})
    assert dict(calls) == {"main (m.c) -> LZ4_compress_fast (lz4.c)": 5}
    assert dict(into(calls, frozenset({"LZ4_compress_fast"}))) == dict(calls)
    assert dict(into(calls, frozenset({"main"}))) == {}  # the callee's name, not the caller's


def test_the_hint_is_placed_in_the_unit_with_the_most_time(tmp_path: Path) -> None:
    """brotli's hint said where: constants.c (the binary's first unit, tables only) of a
    run 83% in backward_references.c's CreateBackwardReferencesNH6."""
    (tmp_path / "aaa_tables.c").write_text("const int table[4] = {1, 2, 3, 4};\n")
    (tmp_path / "main.c").write_text("int twice(int x);\nint main(void) { return twice(0); }\n")
    (tmp_path / "util.c").write_text("int twice(int x) { return 2 * x; }\n")
    exe = tmp_path / "three"
    sources = [str(tmp_path / n) for n in ("aaa_tables.c", "main.c", "util.c")]
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), *sources], check=True)
    units = compile_units(str(exe))
    assert units[0].path.endswith("aaa_tables.c")
    ordered = hottest_first(str(exe), units, {"twice": 9.0, "main": 1.0})
    assert [Path(u.path).name for u in ordered][:2] == ["util.c", "main.c"]


def test_two_functions_of_one_name_are_placed_by_the_count_runs_addresses(tmp_path: Path) -> None:
    """tests/fixtures/statics: hot.c's and cold.c's static `twin`, a count run's
    `twin (hot.c)` and `twin (cold.c)`. Looked up by name, neither was found (the time of
    m4's `peek_token (input.c)` was in no unit), and `twin` alone was the last symbol of
    the name; the run's own addresses place each in its unit."""
    from test_callgrind import statics_run

    from perfsleuth.formats import callgrind

    binary, out = statics_run(tmp_path, "callgrind.out.statics")
    counts = callgrind.exact_counts(callgrind.apart(out, callgrind.parse(out)))
    entries = entry_addresses(counts, str(binary))
    units = compile_units(str(binary))
    assert [Path(u.path).name for u in units] == ["main.c", "hot.c", "cold.c"]
    ordered = hottest_first(str(binary), units, {"twin (cold.c)": 9.0, "main": 1.0}, entries)
    assert [Path(u.path).name for u in ordered][:2] == ["cold.c", "main.c"]
    ordered = hottest_first(str(binary), units, {"twin (hot.c)": 9.0, "main": 1.0}, entries)
    assert Path(ordered[0].path).name == "hot.c"


VECTORS = """
#define N 4096
float a[N], b[N];
__attribute__((noinline)) void axpy(float *restrict x, const float *restrict y, float k) {
    for (int i = 0; i < N; i++) x[i] += k * y[i];
}
__attribute__((noinline)) unsigned scalar(unsigned h, int n) {
    for (int i = 0; i < n; i++) h = (h ^ (h >> 7)) * 2654435761u + (unsigned)i;
    return h;
}
int main(int argc, char **argv) { (void)argv; axpy(a, b, 2.0f); return (int)scalar(1u, argc); }
"""


def test_packed_simd_counts_where_the_vector_code_has_the_time(tmp_path: Path) -> None:
    """lz4's hint proposed -march=native for 20 packed SSE instructions, all in
    LZ4_XXH32_update, 0.9% of the run (measured 1.003x): a vector loop with little of
    the time is not what -march would widen; the same loop with the time is."""
    (tmp_path / "v.c").write_text(VECTORS)
    exe = tmp_path / "v"
    subprocess.run(["gcc", "-O3", "-g", "-o", str(exe), str(tmp_path / "v.c")], check=True)
    cold = hot_code_shape(str(exe), {"scalar": 0.99, "axpy": 0.01})
    hot = hot_code_shape(str(exe), {"scalar": 0.2, "axpy": 0.8})
    assert cold.instructions == hot.instructions > 0
    assert cold.packed_xmm == 0 and hot.packed_xmm > 0


def test_a_packages_program_is_not_the_users_to_rebuild(tmp_path: Path) -> None:
    from perfsleuth.analyzers import Context
    from perfsleuth.analyzers.build_flags import _binary_path
    from perfsleuth.model.run import RunInfo

    own = tmp_path / "node"
    own.write_bytes(b"\x7fELF")
    binaries = [{"path": "/usr/bin/perl"}, {"path": str(own)}]
    ctx = Context(profile=ProfileBuilder().build(), run=RunInfo(), binaries=binaries)
    assert _binary_path(ctx, "perl") is None
    assert _binary_path(ctx, "node") == str(own)
