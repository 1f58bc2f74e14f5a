"""Which machine loop is a source loop's (static_analysis/machine_code.py), on a
binary built here by GCC."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.static_analysis.machine_code import loop_code, machine_loops

# The inner copy loop (lines 8-11) becomes a memmove call at -O2; the outer loop
# (lines 4-16) around it is a machine loop holding the copy's lines.
SOURCE = """struct Tape { int base[16]; unsigned char cells[4096]; int state; };

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
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("loops")
    (folder / "tape.c").write_text(SOURCE)
    subprocess.run(["gcc", "-O2", "-g", "-o", "tape", "tape.c"], cwd=folder, check=True)
    return folder / "tape"


def test_an_enclosing_loop_is_not_the_source_loop_s_code(binary: Path) -> None:
    assert "call" in " ".join(
        i.text for loop in machine_loops(binary, "tape.c", 4, 16) for i in loop.instructions
    ), "GCC turns the copy loop into a memmove call"
    assert loop_code(binary, "tape.c", 8, 11) is None


def test_the_outer_loop_is_its_own_lines_code(binary: Path) -> None:
    loops = machine_loops(binary, "tape.c", 4, 16)
    assert loops
    assert any(i.where == "tape.c:4" for loop in loops for i in loop.instructions)
