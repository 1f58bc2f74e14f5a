"""Reloads in the machine code of a loop, on binaries built by clang-16 and GCC."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.static_analysis.compiler_remarks import link_for_disassembly
from perfsleuth.static_analysis.machine_code import (
    loop_code,
    machine_loops,
    straight_code,
    straight_line_code,
    vector_loop,
)
from perfsleuth.static_analysis.source import TranslationUnit

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
struct Grid { const int* cells; std::size_t cols; };
void threshold(const Grid* g, unsigned char* out) {
    for (std::size_t c = 0; c < g->cols; c++) out[c] = g->cells[c] > 9;
}
uint32_t local_resized(const uint32_t* in, std::size_t n) {
    std::vector<uint8_t> buf;
    buf.resize(n);
    for (std::size_t i = 0; i < buf.size(); i++) buf[i] = in[i] & 0xff;
    return buf.empty() ? 0 : buf[0];
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


def test_clang_vectorises_the_char8_t_loop_and_gcc_does_not(binary: Path) -> None:
    """GCC 12 does not vectorise a loop of unknown trip count at -O2 (it wants a runtime
    alias check: the char8_t fix pays with clang, not with GCC -O2)."""
    loop = vector_loop(binary, "loops.cc", 8, 8)
    if "clang" in binary.parent.name:
        assert loop is not None and loop.simd > 0
    else:
        assert loop is None or loop.simd == 0


def test_a_set_condition_store_is_a_byte_store(binary: Path) -> None:
    """out[c] = a > b compiles to setcc on a byte in memory; clang then reloads g->cells
    and g->cols after it."""
    loop = loop_code(binary, "loops.cc", 12, 12)
    assert loop is not None
    assert any(i.text.startswith("set") for i in loop.byte_stores)
    if "clang" in binary.parent.name:
        assert loop.confirms_aliasing


def test_a_local_object_s_reloads_are_read_from_the_stack(binary: Path) -> None:
    """buf's address escaped into resize(): clang reads its bounds from the stack after
    every byte, which are reloads of the object, not spills; GCC reads them once."""
    stack = loop_code(binary, "loops.cc", 17, 17, stack_reads=True)
    assert stack is not None and stack.byte_stores
    reloads_from_stack = [i for i in stack.reloads if "[rsp" in i.text]
    if "clang" in binary.parent.name:
        assert stack.confirms_aliasing and reloads_from_stack
        spills = loop_code(binary, "loops.cc", 17, 17)
        assert spills is not None and not spills.confirms_aliasing
    else:
        assert not reloads_from_stack


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


def test_a_loop_made_a_call_is_straight_code_that_reloads_nothing(tape: Path) -> None:
    code = straight_code(tape, "tape.c", 8, 11)
    assert code is not None and code.straight
    assert any(i.text.startswith("call") for i in code.instructions)
    assert not code.reloads and not code.confirms_aliasing
    assert straight_code(tape, "tape.c", 4, 16) is None  # the outer loop is a machine loop
    assert straight_code(tape, "tape.c", 100, 120) is None


# GCC 12 -O2 unrolls both 16-byte loops; in `reload` it loads b->left again after
# every byte, in `once` (the pointer hoisted) never.
UNROLLED = """struct Block { unsigned char* left; };

void reload(struct Block* b, const unsigned char* src) {
  for (int i = 0; i < 16; ++i) {
    b->left[i] = src[i * 32];
  }
}

void once(struct Block* b, const unsigned char* src) {
  unsigned char* left = b->left;
  for (int i = 0; i < 16; ++i) {
    left[i] = src[i * 32];
  }
}
"""


def test_an_unrolled_loop_s_reloads_are_found_in_its_straight_code(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("unrolled")
    (folder / "unrolled.c").write_text(UNROLLED)
    out = folder / "unrolled.o"
    subprocess.run(["gcc", "-O3", "-g", "-c", "unrolled.c", "-o", str(out)], cwd=folder, check=True)
    assert machine_loops(out, "unrolled.c", 4, 6) == []
    reloading = straight_code(out, "unrolled.c", 4, 6)
    assert reloading is not None and reloading.confirms_aliasing
    assert len(reloading.reloads) >= 8 and len(reloading.byte_stores) == 16
    assert all("qword ptr [rdi]" in i.text for i in reloading.reloads)
    hoisted = straight_code(out, "unrolled.c", 11, 13)
    assert hoisted is not None and len(hoisted.byte_stores) == 16 and not hoisted.reloads


def test_the_outer_loop_is_its_own_lines_code(tape: Path) -> None:
    loops = machine_loops(tape, "tape.c", 4, 16)
    assert loops
    assert any(i.where == "tape.c:4" for loop in loops for i in loop.instructions)


# `mark` reads c->kind again after the byte store (GCC on the fall-through of its
# first `if`, clang in the block its `je` jumps to); `copy2`'s `*op` is copy_pairs'
# local, kept in a register in every copy inlined into its loop.
MARKS = Path(__file__).resolve().parents[1] / "fixtures" / "straight_line_marks.c"


@pytest.mark.parametrize("compiler", ["gcc", "clang-16"])
def test_straight_line_code_reloads_only_where_its_compiler_loads_again(
    tmp_path: Path, compiler: str
) -> None:
    (tmp_path / "marks.c").write_text(MARKS.read_text())
    out = tmp_path / "marks.o"
    subprocess.run(
        [compiler, "-O2", "-g", "-c", "marks.c", "-o", str(out)], cwd=tmp_path, check=True
    )
    mark = straight_line_code(out, "marks.c", 5, 7)
    assert mark is not None and mark.confirms_aliasing and mark.function == "mark"
    assert [i.where for i in mark.byte_stores] == ["marks.c:6"]
    assert any(i.text.endswith("dword ptr [rdi + 0xc]") for i in mark.reloads)  # c->kind
    copy = straight_line_code(out, "marks.c", 13, 14)
    assert copy is not None and copy.function == "copy_pairs"  # inlined into its loop
    assert copy.byte_stores and not copy.reloads
    assert straight_line_code(out, "marks.c", 100, 120) is None


# GCC loads brotli's 16-bit `s->last_bytes_` whole for `storage[0] = (uint8_t)...`
# and only its high byte again for `storage[1] = ... >> 8`: the same bytes.
HIGH_BYTE_ASM = (
    "movzwl (%%rdi), %%eax\\n\\tmovb %%al, (%%rsi)\\n\\t"
    "movzbl 1(%%rdi), %%eax\\n\\tmovb %%al, 1(%%rsi)"
)
HIGH_BYTE = (
    "void high_byte(const unsigned short* last, unsigned char* out) {\n"
    f'    __asm__ volatile("{HIGH_BYTE_ASM}" ::: "rax", "memory");\n'
    "}\n"
)


def test_a_load_of_part_of_what_was_loaded_before_a_byte_store_is_a_reload(
    tmp_path: Path,
) -> None:
    (tmp_path / "high.c").write_text(HIGH_BYTE)
    out = tmp_path / "high.o"
    subprocess.run(["gcc", "-O2", "-g", "-c", "high.c", "-o", str(out)], cwd=tmp_path, check=True)
    code = straight_line_code(out, "high.c", 2, 2)
    assert code is not None and len(code.byte_stores) == 2
    assert [i.text for i in code.reloads] == ["movzx eax, byte ptr [rdi + 1]"]


TWO_GLOBALS = """extern int first_global, second_global;
void put(unsigned char* p) {
    p[0] = (unsigned char)first_global;
    p[1] = (unsigned char)second_global;
}
"""


def test_two_globals_the_unit_does_not_define_are_two_addresses_once_linked(
    tmp_path: Path,
) -> None:
    """Left undefined, both are at 0 in the executable linked for disassembly, and
    the load of the second would read as the first loaded again after `p[0]`'s store."""
    source = tmp_path / "put.c"
    source.write_text(TWO_GLOBALS)
    obj, exe = tmp_path / "put.o", tmp_path / "put"
    subprocess.run(["gcc", "-O2", "-g", "-c", "put.c", "-o", str(obj)], cwd=tmp_path, check=True)
    assert link_for_disassembly(TranslationUnit(source, ["-O2"], "test", tmp_path), obj, exe)
    code = straight_line_code(exe, "put.c", 3, 4)
    assert code is not None and len(code.byte_stores) == 2
    assert code.reloads == []


# Monero's bulletproof_PROVE shape: each byte written may be v[i], so GCC loads v[i]
# again after every one, the pointer stepped on in between (`[rdi]`, `add rdi, 8`,
# `[rdi - 8]`); v[i]'s address changes from one iteration to the next, so it is no
# loop-invariant load.
SPLIT = """#include <stdint.h>
void split(const uint64_t* v, unsigned char* out, unsigned long n) {
    for (unsigned long i = 0; i < n; ++i) {
        out[3 * i] = v[i] & 255;
        out[3 * i + 1] = (v[i] >> 8) & 255;
        out[3 * i + 2] = (v[i] >> 16) & 255;
    }
}
"""


def test_a_load_again_in_one_iteration_after_a_byte_store_is_a_reload(tmp_path: Path) -> None:
    (tmp_path / "split.c").write_text(SPLIT)
    out = tmp_path / "split.o"
    subprocess.run(["gcc", "-O2", "-g", "-c", "split.c", "-o", str(out)], cwd=tmp_path, check=True)
    loop = loop_code(out, "split.c", 3, 7)
    assert loop is not None and len(loop.byte_stores) == 3
    assert {i.where for i in loop.reloads} == {"split.c:5", "split.c:6"}
    assert len({i.text.split(", ")[1] for i in loop.reloads}) == 1  # v[i], twice again


def test_clang_s_byte_at_a_time_loads_of_the_same_element_are_reloads(tmp_path: Path) -> None:
    """clang reads `(v[i] >> 8) & 255` as the byte at +1 of v[i]: after each byte store
    it loads the next byte of the same 8-byte element, never one it loaded before."""
    (tmp_path / "split.c").write_text(SPLIT)
    out = tmp_path / "split.o"
    subprocess.run(
        ["clang-16", "-O2", "-g", "-c", "split.c", "-o", str(out)], cwd=tmp_path, check=True
    )
    loop = loop_code(out, "split.c", 3, 7)
    assert loop is not None and len(loop.byte_stores) == 3
    assert {i.where for i in loop.reloads} == {"split.c:5", "split.c:6"}
    assert all(i.text.startswith("movzx") and "byte ptr" in i.text for i in loop.reloads)
