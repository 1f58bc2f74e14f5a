"""Reloads in the machine code of a loop, on binaries built by clang-16 and GCC."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.static_analysis.machine_code import loop_code, machine_loops, vector_loop

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


# The inner copy loop (lines 8-11) becomes a memmove call at -O2; the outer loop
# (lines 4-16) around it is a machine loop holding the copy's lines.
TAPE = """struct Tape { int base[16]; unsigned char cells[4096]; int state; };

void run(struct Tape* t, const int* ops, int n) {
  for (int k = 0; k < n; k++) {
    int op = ops[k];
    if (op > 0) {
      int pp = t->base[op & 15] + op;
      while (pp > t->base[op & 15]) {
        t->cells[pp] = t->cells[pp - 1];
        pp--;
      }
      t->base[op & 15]++;
    } else {
      t->cells[t->state] = (unsigned char)op;
      t->state += op & 3;
    }
  }
}

int main(void) { return 0; }
"""


@pytest.fixture(scope="module")
def tape(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("loops")
    (folder / "tape.c").write_text(TAPE)
    subprocess.run(["gcc", "-O2", "-g", "-o", "tape", "tape.c"], cwd=folder, check=True)
    return folder / "tape"


def test_an_enclosing_loop_is_not_the_source_loop_s_code(tape: Path) -> None:
    assert "call" in " ".join(
        i.text for loop in machine_loops(tape, "tape.c", 4, 16) for i in loop.instructions
    ), "GCC turns the copy loop into a memmove call"
    assert loop_code(tape, "tape.c", 8, 11) is None


def test_the_outer_loop_is_its_own_lines_code(tape: Path) -> None:
    loops = machine_loops(tape, "tape.c", 4, 16)
    assert loops
    assert any(i.where == "tape.c:4" for loop in loops for i in loop.instructions)
