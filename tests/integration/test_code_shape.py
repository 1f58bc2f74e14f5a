"""The shape of real machine code (static_analysis/code_shape.py): GCC's output for a
branchy function and an arithmetic loop, and the SIMD width of one loop built for the
x86-64 baseline and for x86-64-v3."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.analyzers.build_flags import BRANCHY, function_code
from perfsleuth.static_analysis.code_shape import cpu_flags, shape_of

pytestmark = pytest.mark.integration

SOURCE = """
int classify(const char *s) {
    int kind = 0;
    for (; *s; s++) {
        if (*s >= 'a' && *s <= 'z') kind |= 1;
        else if (*s >= 'A' && *s <= 'Z') kind |= 2;
        else if (*s >= '0' && *s <= '9') kind |= 4;
        else if (*s == ' ' || *s == '\\t') kind |= 8;
        else if (*s == '\\n') break;
        else kind |= 16;
    }
    return kind;
}
void axpy(float *restrict x, const float *restrict y, float k, int n) {
    for (int i = 0; i < n; i++) x[i] += k * y[i];
}
"""


def built(tmp_path: Path, *flags: str) -> str:
    (tmp_path / "shapes.c").write_text(SOURCE)
    out = tmp_path / ("shapes" + "".join(flags).replace("=", "-"))
    argv = ["gcc", "-O3", "-g", "-shared", "-fPIC", *flags, "-o", str(out)]
    subprocess.run([*argv, str(tmp_path / "shapes.c")], check=True)
    return str(out)


def test_a_branchy_function_has_more_conditional_jumps_than_a_vector_loop(
    tmp_path: Path,
) -> None:
    binary = built(tmp_path)
    branchy = shape_of(function_code(binary, "classify") or b"")
    loop = shape_of(function_code(binary, "axpy") or b"")
    assert branchy.instructions and loop.instructions
    assert branchy.branch_density >= BRANCHY > loop.branch_density


def test_the_baselines_vector_loop_is_128_bits_and_x86_64_v3s_is_wider(tmp_path: Path) -> None:
    baseline = shape_of(function_code(built(tmp_path), "axpy") or b"")
    assert baseline.packed_xmm > 0 and baseline.packed_wide == 0
    wider = shape_of(function_code(built(tmp_path, "-march=x86-64-v3"), "axpy") or b"")
    assert wider.packed_wide > 0


def test_zeroing_and_broadcasting_idioms_are_not_vector_arithmetic() -> None:
    """GCC zeroes with pxor and broadcasts a byte with punpck/pshufd in scalar code:
    only the addps is packed arithmetic."""
    zero = bytes.fromhex("660fefc0")  # pxor xmm0, xmm0
    broadcast = bytes.fromhex("660f60c0660f70c000")  # punpcklbw; pshufd xmm0, xmm0, 0
    add = bytes.fromhex("0f58ca")  # addps xmm1, xmm2
    shape = shape_of(zero + broadcast + add)
    assert (shape.instructions, shape.packed_xmm, shape.packed_wide) == (4, 1, 0)


def test_code_that_does_not_decode_has_no_shape() -> None:
    assert shape_of(b"").instructions == 0


def test_the_cpus_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2\n\nprocessor\t: 1\n")
    assert cpu_flags(cpuinfo) == frozenset({"fpu", "sse2", "avx", "avx2"})
    assert cpu_flags(tmp_path / "missing") == frozenset()
