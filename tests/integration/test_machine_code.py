"""Reloads in the machine code of a loop, on binaries built by clang-16 and GCC."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.static_analysis.machine_code import loop_code, vector_loop

pytestmark = pytest.mark.integration

SOURCE = """#include <cstddef>
#include <cstdint>
#include <vector>
void bump(std::vector<uint8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] += 3;
}
void bump8(std::vector<char8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] += 3;
}
"""


@pytest.fixture(scope="module", params=["clang++-16", "g++"])
def binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(request.param.replace("+", "x"))
    (folder / "loops.cc").write_text(SOURCE)
    out = folder / "loops.o"
    subprocess.run(
        [request.param, "-O2", "-g", "-std=c++20", "-c", "loops.cc", "-o", str(out)],
        cwd=folder,
        check=True,
    )
    return out


def test_a_byte_store_loop_reloads_the_vector_bounds(binary: Path) -> None:
    loop = loop_code(binary, "loops.cc", 5, 5)
    assert loop is not None
    assert loop.confirms_aliasing
    assert any("byte ptr" in i.text for i in loop.byte_stores)
    assert all("qword ptr [" in i.text for i in loop.reloads)
    evidence = loop.evidence()
    assert evidence and all(line.startswith("0x") for line in evidence)


def test_the_char8_t_loop_has_no_reloads(binary: Path) -> None:
    loop = loop_code(binary, "loops.cc", 8, 8)
    assert loop is not None
    assert loop.byte_stores and not loop.reloads
    assert not loop.confirms_aliasing


def test_clang_vectorises_the_char8_t_loop(binary: Path) -> None:
    if "clang" not in binary.parent.name:
        pytest.skip("GCC 12 does not vectorise loops of unknown trip count at -O2")
    loop = vector_loop(binary, "loops.cc", 8, 8)
    assert loop is not None and loop.simd > 0


def test_lines_without_code_give_nothing(binary: Path) -> None:
    assert loop_code(binary, "loops.cc", 100, 120) is None
    assert loop_code(binary, "other.cc", 5, 5) is None
